-- The SMS intake's insert (server/devices/sms-store.ts insertSmsBatch) without the foreign key to
-- devices: its check ran as a trigger per inserted row, each a lookup that also locks the device's
-- row (FOR KEY SHARE), and it was the largest single cost of a device_sms insert in a 100-row
-- pgbench insert (docs/benchmarks.md "Hot paths"). What it protected holds without it:
-- * a row names an existing device: the intake's statement inserts only the rows of devices it
--   finds (active or pending verification), and the application never deletes a device (revoked
--   devices keep their rows). Only a device deleted by hand while one of its SMS is being stored
--   could leave that row behind; processing joins devices, so such a row is never processed.
-- * deleting a device deletes its SMS: the trigger below, once per deleting statement.
-- Both idempotency rules stay unique constraints: (device_id, message_id) and (device_id, same_sms).
alter table device_sms drop constraint device_sms_device_id_fkey;

create function device_sms_delete_with_devices() returns trigger language plpgsql as $$
begin
  delete from device_sms where device_id in (select id from gone);
  return null;
end $$;

create trigger devices_delete_device_sms after delete on devices
  referencing old table as gone for each statement execute function device_sms_delete_with_devices();
