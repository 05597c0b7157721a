-- The "same SMS under another message_id" rule (0002) as a unique index on a stored hash instead of
-- on five expressions: every insert hashed the body and compared a wide text key (sim slot, sender,
-- md5 text, second) in the index; now it compares (device_id, a 16-byte hash of the same fields),
-- about 1.5× the insert rate of the old table in a 100-row pgbench insert (docs/benchmarks.md).
-- The rule is the same: same device, slot (none = 0), sender, body and UTC second. The sender's
-- length is part of the hash so no sender/body split of the same text can meet another.
-- Safe on existing data: rows unique under the old key are unique under this one (up to an md5
-- collision, which the old key, md5(body), accepted as well).
alter table device_sms add column same_sms uuid generated always as (
  md5(coalesce(sim_slot, 0)::text || ' ' || floor(extract(epoch from (received_at at time zone 'UTC')))::text || ' '
      || length(from_number)::text || ' ' || from_number || ' ' || body)::uuid) stored;
create unique index device_sms_same_sms_key_v2 on device_sms (device_id, same_sms);
drop index device_sms_same_sms_key;
alter index device_sms_same_sms_key_v2 rename to device_sms_same_sms_key;
