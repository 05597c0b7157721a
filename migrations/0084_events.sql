-- The durable event log (issue 16, docs/events.md): one row per event per organization that may
-- see it, appended in the transaction of the change that caused it (or by a job enqueued in that
-- transaction, deduplicated by `dedupe_key`). Readers order by (txid, id) and read only rows whose
-- transaction is older than every transaction still running (server/events/log.ts), so a cursor
-- never skips a row that commits later with a smaller id.
create table events (
  id bigint generated always as identity primary key,
  txid xid8 not null default pg_current_xact_id(),
  organization_id bigint not null references organizations (id) on delete cascade,
  type text not null,
  hosted_sim_id bigint,
  device_id bigint,
  team_id bigint,
  dedupe_key text,
  payload jsonb not null,
  created_at timestamptz not null default now()
);
create index events_organization_order on events (organization_id, txid, id);
create index events_order on events (txid, id);
create index events_created_at on events (created_at);
create unique index events_dedupe on events (organization_id, type, dedupe_key) where dedupe_key is not null;

-- Consumers that read the whole log once across instances (webhook deliveries): the position each
-- has reached, advanced in the transaction that handles what it read.
create table event_consumers (
  name text primary key,
  after_txid xid8 not null,
  after_id bigint not null,
  updated_at timestamptz not null default now()
);
