-- Issue 17 item 3: locks that behave like activations. A lock may end by itself when the first
-- inbound message under it arrives (`release_on_message`), optionally only a message from one
-- sender (`lock_sender`: E.164 or an alphanumeric sender id, compared case-insensitively). The
-- inbound store releases it in the statement that stores that message (numbers/byos-store.ts
-- countInboundOnNumbers); both columns are cleared with the other lock columns.
alter table hosted_sims
  add column lock_release_on_message boolean not null default false,
  add column lock_sender text;

-- The history keeps the options too, and which message ended a lock released that way.
alter table number_locks
  add column release_on_message boolean not null default false,
  add column sender text,
  add column released_by_message_id bigint;
alter table number_locks drop constraint number_locks_release_reason_check;
alter table number_locks add constraint number_locks_release_reason_check
  check (release_reason in ('unlock', 'expired', 'replaced', 'released_on_message'));
