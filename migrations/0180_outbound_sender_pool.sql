-- The sender pool a send was accepted through (issue 19 item 5, routing to a healthy phone):
-- the `hosted_sims` of the request, null for a send from one `hosted_sim`. A send of a pool
-- still waiting for a phone that went offline may move to another number of this pool
-- (server/messages/reroute.ts).
alter table messages add column sender_pool bigint[];
