-- OAuth 2.0 (authorization code + PKCE) for public clients such as the browser extension.
-- Codes and refresh tokens are stored only as SHA-256 digests; access tokens are `sessions`
-- rows of kind 'oauth', linked to their grant so a grant can be revoked as a whole.

create table oauth_clients (
  id bigint generated always as identity primary key,
  client_id text not null unique,
  name text not null,
  redirect_uris text[] not null check (cardinality(redirect_uris) > 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table oauth_authorization_codes (
  id bigint generated always as identity primary key,
  code_hash bytea not null unique,
  client_id bigint not null references oauth_clients (id) on delete cascade,
  user_id bigint not null references users (id) on delete cascade,
  redirect_uri text not null,
  code_challenge text not null,
  expires_at timestamptz not null,
  -- Set by the first redemption attempt; a second one is a replay and revokes the grant.
  used_at timestamptz,
  created_at timestamptz not null default now()
);

-- A grant is one refresh-token family: everything issued from one authorization code.
create table oauth_grants (
  id uuid primary key default gen_random_uuid(),
  client_id bigint not null references oauth_clients (id) on delete cascade,
  user_id bigint not null references users (id) on delete cascade,
  authorization_code_id bigint unique references oauth_authorization_codes (id) on delete set null,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth_grants_user_idx on oauth_grants (user_id);

create table oauth_refresh_tokens (
  id bigint generated always as identity primary key,
  token_hash bytea not null unique,
  grant_id uuid not null references oauth_grants (id) on delete cascade,
  expires_at timestamptz not null,
  -- Set when rotated; presenting a rotated token again revokes its whole family.
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth_refresh_tokens_grant_idx on oauth_refresh_tokens (grant_id);

-- Which grant an OAuth access token (a `sessions` row) came from.
create table oauth_access_tokens (
  session_id bigint primary key references sessions (id) on delete cascade,
  grant_id uuid not null references oauth_grants (id) on delete cascade
);
create index oauth_access_tokens_grant_idx on oauth_access_tokens (grant_id);
