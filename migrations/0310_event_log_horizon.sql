-- The newest position (txid, id) the retention job has removed from the event log: a cursor
-- before it may have missed events that are gone, and GET /api/events answers it 410
-- cursor_expired instead of resuming silently at the oldest event kept (events/log.ts). One row,
-- written by deleteEventsBefore in the statement that removes the events; none until the first
-- removal (what earlier versions removed is not known, and their cursors keep resuming as before).
create table event_log_horizon (
  only_row boolean primary key default true check (only_row),
  txid xid8 not null,
  id bigint not null
);
