import type { Sql } from "../db/client";
import { enqueueJobs } from "../jobs/queue";
import { type DeviceStatus, SMS_ACCEPTING_STATUSES } from "./transitions";

export type SmsSubmission = { deviceId: number; messageId: string; simSlot: number | null; from: string; body: string; receivedAt: string };

// The batch travels as one JSON text (serialised natively) rather than six arrays, whose
// elements the driver escapes one by one in JavaScript. Text fields hold no NUL (refused with 422
// before any handler runs), which jsonb could not hold.
const asRow = (i: SmsSubmission) => ({
  device_id: i.deviceId,
  message_id: i.messageId,
  sim_slot: i.simSlot,
  from_number: i.from,
  body: i.body,
  received_at: i.receivedAt,
});

/**
 * Stores a batch of submissions and the job that will process them, in one statement (one
 * round trip, one commit). Rows of devices that may not submit are filtered out. Returns the
 * batch's devices whose SMS were filtered out, with their status (null: no such device), so the
 * caller can refuse them; every other device's SMS were stored (or were already).
 *
 * Duplicates of either unique rule (message_id, or the same SMS under another id) are refused by
 * the constraints: `skipDuplicates` skips them (`on conflict do nothing`); without it a duplicate
 * fails the whole statement with a unique violation (`isUniqueViolation`), which the intake then
 * writes again skipping them. A plain insert checks each unique index as it inserts into it,
 * where `on conflict` first probes every unique index and then inserts (docs/benchmarks.md).
 *
 * The batch's devices are read once, by primary key, whatever the plan cache holds: a join of the
 * batch with devices was planned as a hash join over a sequential scan of every device. They are
 * read `for key share`, the weakest lock that conflicts with the `for update` a revocation (and
 * every device operation, management.ts `onDevice`) takes first: a revocation either waits for
 * this statement's commit and then turns these SMS into messages with the device's other waiting
 * ones, or commits first and this statement reads the device revoked and refuses them. Before, an
 * intake whose snapshot predated a revocation stored its SMS after the revocation had processed
 * the device's waiting ones: acknowledged to the phone, and never a message. Heartbeats' updates
 * (no key change) do not conflict with it.
 */
export async function insertSmsBatch(sql: Sql, items: SmsSubmission[], o: { skipDuplicates: boolean }) {
  return sql<{ id: number; status: DeviceStatus | null }[]>`
    with v as (
      select * from jsonb_to_recordset(${JSON.stringify(items.map(asRow))}::text::jsonb)
        as v(device_id bigint, message_id uuid, sim_slot int, from_number text, body text, received_at timestamptz)),
    d as (
      select id, status, status = any(${SMS_ACCEPTING_STATUSES as DeviceStatus[]}::text[]) as accepts
      from devices where id = any(array(select distinct device_id from v)) for key share),
    inserted as (
      insert into device_sms (device_id, message_id, sim_slot, from_number, body, received_at)
      select v.device_id, v.message_id, v.sim_slot, v.from_number, v.body, v.received_at
      from v join d on d.id = v.device_id where d.accepts
      ${o.skipDuplicates ? sql`on conflict do nothing` : sql``}
      returning id),
    job as (${enqueueJobs(sql, "device_sms.process", sql`select jsonb_build_object('ids', jsonb_agg(id)) from inserted having count(*) > 0`)})
    select v.id, d.status from (select distinct device_id as id from v) v left join d on d.id = v.id
    where d.accepts is not true`;
}

export type UnprocessedSms = {
  id: number;
  device_id: number;
  message_id: string;
  sim_slot: number | null;
  from_number: string;
  body: string;
  received_at: Date;
  hosted_sim_id: number | null;
  /** The slot of the card the SMS is attributed to (its own slot, or the first active card's for an SMS without one). */
  attributed_slot: number | null;
};

/**
 * Unprocessed SMS (by id, or a page of some devices' SMS), locked for this transaction, each with the hosted
 * SIM it belongs to: the active card of its slot, or for an SMS without a slot the device's
 * first active card (by slot), whose slot it is then stored with. hosted_sim_id null: the SIM
 * is not verified yet (or no longer active), the SMS waits.
 */
export async function lockUnprocessedSms(tx: Sql, by: { ids: number[] } | { deviceIds: number[]; afterId: number; limit: number }) {
  // By id (the primary key) is the common case; by device (the (device_id, message_id) unique
  // index, all the device's rows, filtered) follows a verification (migrations/0240), a page of
  // `limit` rows after `afterId` at a time: a device may have kept many waiting.
  const filter =
    "ids" in by
      ? tx`s.id = any(${by.ids}::bigint[]) and s.message_row_id is null`
      : tx`s.device_id = any(${by.deviceIds}::bigint[]) and s.message_row_id is null and s.id > ${by.afterId}`;
  return tx<UnprocessedSms[]>`
    select s.id, s.device_id, s.message_id, s.sim_slot, s.from_number, s.body, s.received_at,
      c.hosted_sim_id, coalesce(s.sim_slot, c.sim_slot) as attributed_slot
    from device_sms s join devices d on d.id = s.device_id
    left join lateral (
      select c.hosted_sim_id, c.sim_slot from sim_cards c
      where c.device_id = s.device_id and c.status = 'active' and c.hosted_sim_id is not null
        and (s.sim_slot is null or c.sim_slot = s.sim_slot)
      order by c.sim_slot nulls last, c.id limit 1) c on true
    where ${filter} and d.status <> 'revoked'
    order by s.id
    ${"limit" in by ? tx`limit ${by.limit}` : tx``}
    for update of s`;
}

/**
 * Links processed SMS to their messages and counts them on their devices, in one statement. Both
 * tables are reached by key (`= any(...)`): as joins with the batch they were planned as hash
 * joins over a sequential scan of every row, a cost that grew with the table (device_sms keeps
 * every SMS).
 */
export async function markSmsProcessed(tx: Sql, done: { smsId: number; deviceId: number; messageRowId: number }[]) {
  if (done.length === 0) return;
  const smsIds = done.map((d) => d.smsId);
  await tx`
    with v as (
      select * from unnest(${smsIds}::bigint[], ${done.map((d) => d.deviceId)}::bigint[], ${done.map((d) => d.messageRowId)}::bigint[])
        as v(sms_id, device_id, message_row_id)),
    linked as (update device_sms s set message_row_id = v.message_row_id from v where s.id = any(${smsIds}::bigint[]) and s.id = v.sms_id),
    -- Devices locked in id order, as every multi-device write does, so two writers never deadlock.
    locked as (select id from devices where id = any(array(select distinct device_id from v)) order by id for no key update)
    update devices d set messages_received_count = d.messages_received_count + c.n
    from (select device_id, count(*) as n from v group by device_id) c where d.id = any(array(select id from locked)) and d.id = c.device_id`;
}

export async function enqueueDeviceSmsProcessing(tx: Sql, deviceId: number) {
  await enqueueJobs(tx, "device_sms.process", tx`select ${tx.json({ device_id: deviceId })}::jsonb`);
}
