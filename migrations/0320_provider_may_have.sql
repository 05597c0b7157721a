-- A pool-number send whose provider call may have reached the provider: set when a call starts,
-- cleared when the provider's answer says it did not take the message (a 429 or 5xx to retry).
-- A send ended without the provider's acceptance while it is set (its time ran out, its number
-- was deactivated or locked by another organization) ends `failed` "may have been sent" and
-- keeps its quota unit, instead of `expired` with the unit given back, which told the sender to
-- send it again (server/messages/outbound-jobs.ts). A constant default: no table rewrite.
alter table messages add column provider_may_have boolean not null default false;
