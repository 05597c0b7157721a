-- Consecutive heartbeats that listed the device's SIM numbers without this card's. At
-- MISSED_HEARTBEATS_TO_INACTIVE (server/devices/presence-store.ts) an active card goes inactive
-- (issue 15 item 3, docs/api-notes.md "Device SIM cards"); a heartbeat that lists its number
-- sets it back to 0. Heartbeats without sim_cards[] leave it alone.
alter table sim_cards add column missed_heartbeats int not null default 0;
