-- The last TOTP time step accepted for a user: a code is good once (RFC 6238 section 5.2).
alter table users add column totp_last_step bigint;

-- Expired challenges of a user are swept at their next login.
create index login_challenges_user_idx on login_challenges (user_id);
