-- Idempotency-Key answers are kept sealed (AES-256-GCM under SECRETS_KEY, server/lib/secret-box.ts),
-- so the creates that show a secret once (API keys, webhook secrets, device tokens) can take part.
-- `response` stays readable for the answers kept before this migration (at most 24 h old); new
-- answers leave it null.
alter table idempotency_keys add column response_sealed text;
