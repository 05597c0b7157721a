-- Numbers change only by proof (issue 14 defects 1 and 8; docs/api-notes.md "Numbers change only by proof").

-- A number a member asked a SIM card to take (PATCH phone_number). Only a claim: the card keeps
-- its number (null while pending) until an SMS from the claimed number carries the card's
-- verification code. Claims are not exclusive: several cards may claim one number, and the
-- first proof wins.
alter table sim_cards add column claimed_number text;

-- Wrong verification codes, per sender number (`from:+1...`) and per device (`device:42`): one
-- fixed window per key, written outside the verification transaction so every instance sees
-- every attempt (server/numbers/verification-throttle.ts).
create table verification_throttle (
  key text primary key,
  attempts integer not null,
  max_attempts integer not null,
  resets_at timestamptz not null
);
create index verification_throttle_resets_idx on verification_throttle (resets_at);
