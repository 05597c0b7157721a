-- Expired OAuth codes and refresh tokens are pruned by expiry (server/oauth/store.ts pruneExpired).
create index oauth_authorization_codes_expires_idx on oauth_authorization_codes (expires_at);
create index oauth_refresh_tokens_expires_idx on oauth_refresh_tokens (expires_at);
