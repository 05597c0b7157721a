-- Hosted SIMs (pool and BYOS numbers), devices and their SIM cards, messages and who may see them.

create table hosted_sims (
  id bigint generated always as identity primary key,
  number text not null unique,
  provider text not null,
  status text not null default 'active' check (status in ('active', 'inactive')),
  type text not null check (type in ('shared', 'virtual')),
  shared_max_orgs integer not null check (shared_max_orgs >= 1),
  messages_received_count bigint not null default 0,
  -- The current lock, if any; a lock whose locked_until has passed is no lock.
  lock_organization_id bigint references organizations (id) on delete set null,
  lock_team_id bigint,
  lock_user_id bigint,
  lock_api_key_id bigint,
  locked_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- An organization's attachment to a number: its own alias and team.
create table hosted_sim_organizations (
  hosted_sim_id bigint not null references hosted_sims (id) on delete cascade,
  organization_id bigint not null references organizations (id) on delete cascade,
  alias text,
  team_id bigint references teams (id) on delete set null,
  created_at timestamptz not null default now(),
  primary key (hosted_sim_id, organization_id)
);
create index hosted_sim_organizations_org_idx on hosted_sim_organizations (organization_id);

create table number_locks (
  id bigint generated always as identity primary key,
  hosted_sim_id bigint not null references hosted_sims (id) on delete cascade,
  organization_id bigint not null references organizations (id) on delete cascade,
  team_id bigint,
  user_id bigint,
  api_key_id bigint,
  locked_at timestamptz not null default now(),
  locked_until timestamptz not null,
  released_at timestamptz,
  release_reason text check (release_reason in ('unlock', 'expired', 'replaced'))
);
create index number_locks_sim_idx on number_locks (hosted_sim_id, locked_at desc);

create table devices (
  id bigint generated always as identity primary key,
  organization_id bigint not null references organizations (id) on delete cascade,
  android_id text not null,
  device_name text,
  device_model text not null,
  app_version text not null,
  phone_number text,
  status text not null default 'pending_verification'
    check (status in ('pending_verification', 'active', 'disabled', 'revoked')),
  is_online boolean not null default false,
  is_in_doze_mode boolean not null default false,
  battery_level integer,
  last_seen_at timestamptz,
  config_version integer not null default 1,
  messages_received_count bigint not null default 0,
  created_by bigint references users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- One live registration per android_id in an organization; a revoked one may register again.
create unique index devices_android_id_key on devices (organization_id, lower(android_id)) where status <> 'revoked';

create table sim_cards (
  id bigint generated always as identity primary key,
  device_id bigint not null references devices (id) on delete cascade,
  sim_slot integer check (sim_slot between 1 and 10),
  phone_number text,
  status text not null default 'pending' check (status in ('pending', 'active', 'inactive')),
  signal_strength integer,
  hosted_sim_id bigint references hosted_sims (id) on delete set null,
  verification_code text unique,
  code_expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index sim_cards_device_idx on sim_cards (device_id);
-- A number is active on one SIM card at most.
create unique index sim_cards_active_number_key on sim_cards (phone_number) where status = 'active';

-- SMS submitted by devices, stored before the 202; processed into messages by a job.
create table device_sms (
  id bigint generated always as identity primary key,
  device_id bigint not null references devices (id) on delete cascade,
  message_id uuid not null,
  sim_slot integer,
  from_number text not null,
  body text not null,
  received_at timestamptz not null,
  message_row_id bigint,            -- the messages row once processed
  created_at timestamptz not null default now(),
  unique (device_id, message_id)
);
-- The same SMS delivered twice by Android under two message_ids (to the second).
create unique index device_sms_same_sms_key on device_sms
  (device_id, coalesce(sim_slot, 0), from_number, md5(body), date_trunc('second', received_at at time zone 'UTC'));
create index device_sms_unprocessed_idx on device_sms (device_id) where message_row_id is null;

create table messages (
  id bigint generated always as identity primary key,
  hosted_sim_id bigint references hosted_sims (id) on delete cascade,
  number text not null,
  direction text not null check (direction in ('inbound', 'outbound')),
  from_number text not null,
  to_number text not null,
  text text not null,
  status text not null,
  source text not null check (source in ('provider', 'device', 'api')),
  device_id bigint references devices (id) on delete set null,
  sim_slot integer,
  external_id text,
  team_id bigint,
  locked boolean not null default false,
  organization_id bigint references organizations (id) on delete cascade, -- sender's organization, outbound only
  error text,
  received_at timestamptz,
  sent_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index messages_provider_sid_key on messages (external_id) where source = 'provider';
create index messages_outbound_quota_idx on messages (organization_id, created_at) where direction = 'outbound';

-- Who may see a message, stamped once when it arrives (API.md lock meaning).
create table message_visibility (
  organization_id bigint not null references organizations (id) on delete cascade,
  hosted_sim_id bigint not null references hosted_sims (id) on delete cascade,
  message_id bigint not null references messages (id) on delete cascade,
  team_id bigint,
  primary key (organization_id, hosted_sim_id, message_id)
);
create index message_visibility_message_idx on message_visibility (message_id);

-- Offline and webhook alerts, sent by mail when SMTP is configured, recorded always.
create table alerts (
  id bigint generated always as identity primary key,
  organization_id bigint not null references organizations (id) on delete cascade,
  kind text not null,
  subject_id bigint,
  subject text not null,
  recipients text[] not null default '{}',
  sent_at timestamptz,
  error text,
  created_at timestamptz not null default now()
);
