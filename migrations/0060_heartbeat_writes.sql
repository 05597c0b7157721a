-- Heartbeat writes (server/devices/presence-store.ts writeHeartbeats).

-- The transaction that last brought the device online. A heartbeat's update sets it only when
-- the row it updates is offline, and compares it with its own transaction id: the one writer
-- that brought the device back learns so without locking the row first.
alter table devices add column online_tx xid8;

-- Every heartbeat rewrites its device's row; free room in each page lets PostgreSQL keep the new
-- version on the same page without touching the indexes (HOT). Applies to pages written from now on.
alter table devices set (fillfactor = 50);
