-- message_visibility without its own foreign key to hosted_sims. Every visibility row names its
-- message (message_visibility.message_id references messages, on delete cascade), whose
-- hosted_sim_id references hosted_sims (on delete cascade), and every insert copies the message's
-- hosted_sim_id (server/messages/inbound.ts, outbound-store.ts, reroute.ts): the number a row
-- names exists because its message's does, and a number's deletion reaches the row through its
-- messages. The key checked it a second time for every row (a lookup of hosted_sims and a row lock
-- per visibility row), 6-10 µs of PostgreSQL's CPU per processed SMS of 92-95 (docs/benchmarks.md,
-- session of 2026-11-27 17:38).
alter table message_visibility drop constraint message_visibility_hosted_sim_id_fkey;
