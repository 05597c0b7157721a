import type { Pool, Sql } from "../db/client";
import type { EventTail } from "../events/tail";
import type { BatchHandler } from "../jobs/queue";
import { storeInboundMessages } from "../messages/inbound";
import { lockUnprocessedSms, markSmsProcessed } from "./sms-store";

type Payload = { ids?: number[]; device_id?: number };

/**
 * SMS turned into messages per transaction at most. An intake batch's job names up to 1,000 SMS
 * and the queue hands over 100 jobs at a time, so a backlog's batch of jobs may name 100,000:
 * one transaction of that size ran at 174 SMS/s against 5,000/s for transactions of about
 * 6,000 (docs/benchmarks.md, session of 2026-11-27 11:05).
 */
export const PROCESS_CHUNK = 1000;

/**
 * Turns stored device SMS into messages, on the job queue, a batch of jobs at a time (each
 * names the SMS of one intake batch, or a device whose SIM was just verified), PROCESS_CHUNK SMS
 * per transaction: the messages, their events, the device_sms links and the counters commit together,
 * so a crash means the jobs are claimed again and find only what is still unprocessed. SMS whose
 * SIM is not verified stay unprocessed; verification enqueues a job for the device's waiting SMS.
 */
export async function processDeviceSms(sql: Pool, payloads: Payload[]) {
  const ids = payloads.flatMap((p) => p.ids ?? []);
  const deviceIds = payloads.flatMap((p) => (p.device_id === undefined ? [] : [p.device_id]));
  let processed = 0;
  for (let k = 0; k < ids.length; k += PROCESS_CHUNK) processed += (await processChunk(sql, { ids: ids.slice(k, k + PROCESS_CHUNK) })).processed;
  // The devices' waiting SMS, page by page (SMS of a SIM still unverified stay, and are passed),
  // until a page finds none: a page may come back short of the limit while more remain, when rows
  // it waited on were processed meanwhile by another transaction (a locking read drops them).
  for (let afterId = 0; deviceIds.length > 0; ) {
    const page = await processChunk(sql, { deviceIds, afterId, limit: PROCESS_CHUNK });
    processed += page.processed;
    if (page.locked === 0) break;
    afterId = page.lastId;
  }
  return processed;
}

const processChunk = (sql: Pool, by: Parameters<typeof lockUnprocessedSms>[1]) => sql.begin((tx) => processIn(tx, by));

/**
 * A revoked device's cards no longer serve its numbers, so its SMS still unprocessed then would
 * wait for good: the revocation processes them first, in its own transaction (devices/management.ts),
 * every SMS acknowledged before it (an intake backlog included) becoming a message.
 */
export async function processWaitingSmsIn(tx: Sql, deviceId: number) {
  for (let afterId = 0; ; ) {
    const page = await processIn(tx, { deviceIds: [deviceId], afterId, limit: PROCESS_CHUNK });
    if (page.locked < PROCESS_CHUNK) return;
    afterId = page.lastId;
  }
}

async function processIn(tx: Sql, by: Parameters<typeof lockUnprocessedSms>[1]) {
  const rows = await lockUnprocessedSms(tx, by);
  const ready = rows.filter((row) => row.hosted_sim_id !== null);
  const stored = await storeInboundMessages(
    tx,
    ready.map((row) => ({
      hostedSimId: row.hosted_sim_id!,
      from: row.from_number,
      text: row.body,
      source: "device" as const,
      deviceId: row.device_id,
      simSlot: row.attributed_slot,
      externalId: row.message_id,
      receivedAt: row.received_at,
    })),
  );
  const processed = ready.flatMap((row, k) => (stored[k] ? [{ smsId: row.id, deviceId: row.device_id, messageRowId: stored[k].messageId }] : []));
  await markSmsProcessed(tx, processed);
  return { processed: processed.length, locked: rows.length, lastId: rows.at(-1)?.id ?? 0 };
}

/** The handler of `device_sms.process` (registered by server/jobs/workers.ts): the messages' events are read at once. */
export const deviceSmsHandler =
  (deps: { sql: Pool; events: Pick<EventTail, "notify"> }): BatchHandler<Payload> =>
  async (jobs) => {
    const processed = await processDeviceSms(
      deps.sql,
      jobs.map((j) => j.payload),
    );
    if (processed > 0) deps.events.notify();
  };
