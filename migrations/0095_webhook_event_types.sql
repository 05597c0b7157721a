-- Webhooks deliver events of the log (issue 16, docs/events.md "Webhooks"): each integration
-- subscribes to event types ('*' = every type); existing integrations keep getting what they got.
alter table webhook_integrations add column event_types text[] not null default '{message.received}';

-- A delivery is one event to one integration. Several integrations receive the same event under
-- the same id (its cursor), and a redelivery or a replay sends it again under that id, so the
-- event id is no longer unique. What stays unique: the log consumer's one delivery of an event to
-- an integration (`origin` 'live'), so a consumer run repeated after a lost commit adds nothing.
alter table webhook_deliveries drop constraint webhook_deliveries_event_id_key;
drop index webhook_deliveries_message_key;
alter table webhook_deliveries add column origin text not null default 'live' check (origin in ('live', 'redelivery', 'replay'));
-- message_id names the message of a message event, like the log's records: a delivery is of an
-- event, which outlives its message (a message removed before the consumer read its event must
-- not stop the consumer on a foreign key).
alter table webhook_deliveries drop constraint webhook_deliveries_message_id_fkey;
create unique index webhook_deliveries_live_key on webhook_deliveries (event_id, webhook_integration_id) where origin = 'live';

-- The consumer that turns the log into deliveries starts at the log's head: events appended before
-- this migration were announced by the old path (message.received) or not at all.
insert into event_consumers (name, after_txid, after_id)
select 'webhooks', coalesce(h.txid, '0'::xid8), coalesce(h.id, 0)
from (select 1) one left join lateral (select txid, id from events order by txid desc, id desc limit 1) h on true
on conflict (name) do nothing;
