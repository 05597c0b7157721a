-- The durable feed of credential revocations and cached-caller invalidations (server/auth/revocation-log.ts).
-- Written in the transaction that revokes; every server instance reads it every few hundred
-- milliseconds, so a revocation reaches every instance even without Redis (the operators' CLI,
-- an instance cut off from Redis). Rows are pruned after a few minutes.
create table credential_revocations (
  id bigserial primary key,
  payload jsonb not null,
  created_at timestamptz not null default now()
);
create index credential_revocations_created_idx on credential_revocations (created_at);
