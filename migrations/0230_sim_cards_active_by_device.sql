-- A device's active SIM cards by slot: what device SMS processing (server/devices/sms-store.ts
-- lockUnprocessedSms, the card each SMS belongs to) and every device read (store.ts
-- devicePhoneNumber, the number of the lowest active slot) look up, once per SMS or device.
-- Without it the planner, whenever sim_cards' statistics were older than its rows, answered those
-- lookups from sim_cards_active_number_key, every active card of every device read and filtered
-- by device: 0.13 ms per SMS with 1,000 devices, most of a processing batch's lock statement
-- (docs/benchmarks.md, session of 2026-11-27). With this index it is one index probe (0.004 ms),
-- whatever the statistics say.
create index sim_cards_active_by_device on sim_cards (device_id, sim_slot) where status = 'active';
