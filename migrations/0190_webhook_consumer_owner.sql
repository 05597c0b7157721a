-- The webhook consumer makes first attempts in memory ahead of its durable position (issue 16,
-- server/webhooks/consumer.ts): the position advances only past events whose deliveries are all
-- recorded, and one instance at a time owns it under a lease, so two instances never attempt the
-- same events side by side. An owner that dies leaves the lease to lapse; the next owner reads
-- again from the position (the same events, the same webhook-ids: at least once).
alter table event_consumers add column owner text, add column owner_until timestamptz;
