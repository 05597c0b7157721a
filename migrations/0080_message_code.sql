-- Issue 17: the one-time code an inbound message carries (server/messages/code.ts extracts it
-- when the message is stored; outbound messages keep null). Messages stored before this
-- migration keep null: the extractor is JavaScript, and a code is wanted for the message that
-- is about to arrive, not for old history.
alter table messages add column code text;

-- `GET /api/messages?has_code=true` walks one organization's view of a number newest first, as
-- the unfiltered history does: the flag is copied onto message_visibility (a message's code never
-- changes after it is stored) and a partial index keeps the coded rows of each view in seq order,
-- so a page of codes reads only coded rows however many messages without a code the number has.
alter table message_visibility add column has_code boolean not null default false;
create index message_visibility_code_seq on message_visibility (organization_id, hosted_sim_id, seq) where has_code;
