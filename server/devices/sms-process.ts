import type { Pool } from "../db/client";
import type { EventTail } from "../events/tail";
import type { BatchHandler } from "../jobs/queue";
import { storeInboundMessages } from "../messages/inbound";
import { lockUnprocessedSms, markSmsProcessed } from "./sms-store";

type Payload = { ids?: number[]; device_id?: number };

/**
 * Turns stored device SMS into messages, on the job queue, a batch of jobs at a time (each
 * names the SMS of one intake batch, or a device whose SIM was just verified). Runs in one
 * transaction per batch: the messages, their events, the device_sms links and the counters commit together,
 * so a crash means the jobs are claimed again and find only what is still unprocessed. SMS whose
 * SIM is not verified stay unprocessed; verification enqueues a job for the device's waiting SMS.
 */
export async function processDeviceSms(sql: Pool, payloads: Payload[]) {
  return sql.begin(async (tx) => {
    const rows = await lockUnprocessedSms(tx, {
      ids: payloads.flatMap((p) => p.ids ?? []),
      deviceIds: payloads.flatMap((p) => (p.device_id === undefined ? [] : [p.device_id])),
    });
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
    return processed.length;
  });
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
