-- Idempotency-Key (issue 19): the first request with a key does the work; a retry with the same
-- key and body within 24 h gets the stored answer. The primary key makes concurrent requests with
-- one key do the work once.
create table idempotency_keys (
  organization_id bigint not null references organizations (id) on delete cascade,
  principal text not null,
  key text not null,
  fingerprint text not null,
  status int,
  response jsonb,
  created_at timestamptz not null default now(),
  primary key (organization_id, principal, key)
);
create index idempotency_keys_created_at on idempotency_keys (created_at);
