-- Accounts, organizations, plans, teams, API keys, the job queue and settings.

create table plans (
  name text primary key,
  max_devices integer not null,
  monthly_messages integer not null,
  compression boolean not null,
  priority_support boolean not null,
  debug_mode boolean not null
);
insert into plans values
  ('free', 2, 100, false, false, false),
  ('pro', 25, 10000, true, false, false),
  ('enterprise', 1000, 1000000, true, true, false);

create table organizations (
  id bigint generated always as identity primary key,
  name text not null,
  plan text not null default 'free' references plans (name),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table users (
  id bigint generated always as identity primary key,
  name text not null,
  email text not null,
  password_hash text not null,
  email_verified_at timestamptz,
  totp_secret text,               -- set by 2FA setup; 2FA is on only when totp_enabled
  totp_enabled boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));

create table memberships (
  user_id bigint not null references users (id) on delete cascade,
  organization_id bigint not null references organizations (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (user_id, organization_id)
);
create index memberships_organization_idx on memberships (organization_id);

-- Session and OAuth access tokens; only a SHA-256 of the token is kept.
create table sessions (
  id bigint generated always as identity primary key,
  user_id bigint not null references users (id) on delete cascade,
  token_hash bytea not null unique,
  kind text not null default 'session' check (kind in ('session', 'oauth')),
  expires_at timestamptz not null,
  last_used_at timestamptz,
  created_at timestamptz not null default now()
);
create index sessions_user_idx on sessions (user_id);

-- tmp_tokens of a login waiting for its TOTP code.
create table login_challenges (
  id bigint generated always as identity primary key,
  user_id bigint not null references users (id) on delete cascade,
  token_hash bytea not null unique,
  failed_attempts integer not null default 0,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);

create table api_keys (
  id bigint generated always as identity primary key,
  organization_id bigint not null references organizations (id) on delete cascade,
  name text not null,
  key_prefix text not null,
  key_hash bytea not null unique,
  permissions text[] not null default '{}',
  created_by bigint references users (id) on delete set null,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index api_keys_organization_idx on api_keys (organization_id);

create table teams (
  id bigint generated always as identity primary key,
  organization_id bigint not null references organizations (id) on delete cascade,
  name text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index teams_organization_idx on teams (organization_id);

create table team_members (
  team_id bigint not null references teams (id) on delete cascade,
  user_id bigint not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (team_id, user_id)
);
create index team_members_user_idx on team_members (user_id);

-- Durable job queue: claimed with FOR UPDATE SKIP LOCKED; a claim lasts until locked_until,
-- after which another worker may take the job again (the first one crashed or hung).
create table jobs (
  id bigint generated always as identity primary key,
  queue text not null,
  payload jsonb not null default '{}',
  run_at timestamptz not null default now(),
  attempts integer not null default 0,
  max_attempts integer not null default 10,
  locked_until timestamptz,
  locked_by text,
  last_error text,
  dead boolean not null default false,  -- gave up after max_attempts; kept for inspection
  dedupe_key text unique,               -- a second enqueue with the same key is a no-op
  created_at timestamptz not null default now()
);
create index jobs_ready_idx on jobs (queue, run_at) where not dead;

-- Server-wide values generated once (realtime app credentials, ...).
create table settings (
  key text primary key,
  value text not null,
  created_at timestamptz not null default now()
);
