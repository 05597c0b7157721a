-- Webhook integrations (organization level), their mappings to teams, deliveries and the
-- per-attempt delivery log.

create table webhook_integrations (
  id bigint generated always as identity primary key,
  organization_id bigint not null references organizations (id) on delete cascade,
  name text not null,
  url text not null,
  -- Signing secret sealed with AES-256-GCM (server/webhooks/secrets.ts); never stored in clear.
  secret_sealed text not null,
  headers jsonb not null default '{}',
  timeout_seconds integer not null default 30 check (timeout_seconds between 1 and 120),
  retry_count integer not null default 3 check (retry_count between 0 and 10),
  is_active boolean not null default true,
  -- First failed attempt of the current unbroken run of failures; null after any success.
  failing_since timestamptz,
  disabled_reason text,
  disabled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_integrations_organization_idx on webhook_integrations (organization_id);

create table webhook_mappings (
  id bigint generated always as identity primary key,
  webhook_integration_id bigint not null references webhook_integrations (id) on delete cascade,
  team_id bigint not null references teams (id) on delete cascade,
  forwarding_mode text not null check (forwarding_mode in ('always', 'lock_required')),
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (webhook_integration_id, team_id)
);
create index webhook_mappings_team_idx on webhook_mappings (team_id);

-- One event for one integration. The body is frozen at creation so every retry sends the same
-- bytes under the same webhook-id.
create table webhook_deliveries (
  id bigint generated always as identity primary key,
  webhook_integration_id bigint not null references webhook_integrations (id) on delete cascade,
  event_id text not null unique,
  event_type text not null,
  message_id bigint references messages (id) on delete cascade,
  body text not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed', 'retrying')),
  attempts integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- Forwarding is idempotent: one delivery per message and integration, however often fan-out runs.
create unique index webhook_deliveries_message_key on webhook_deliveries (message_id, webhook_integration_id) where message_id is not null;
create index webhook_deliveries_integration_idx on webhook_deliveries (webhook_integration_id);

create table webhook_delivery_logs (
  id bigint generated always as identity primary key,
  webhook_integration_id bigint not null references webhook_integrations (id) on delete cascade,
  delivery_id bigint references webhook_deliveries (id) on delete cascade,
  event_id text not null,
  event_type text not null,
  message_id bigint,
  attempt integer not null,
  status text not null check (status in ('pending', 'succeeded', 'failed', 'retrying')),
  http_status integer,
  response_body text,
  response_time_ms integer,
  error text,
  next_retry_at timestamptz,
  created_at timestamptz not null default now()
);
create index webhook_delivery_logs_integration_idx on webhook_delivery_logs (webhook_integration_id, id desc);
create index webhook_delivery_logs_delivery_idx on webhook_delivery_logs (delivery_id);
