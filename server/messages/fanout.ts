import type { Pool, Sql } from "../db/client";
import { event } from "../events/catalog";
import { appendEvents, type NewEvent } from "../events/log";
import type { MessageEvent } from "../events/payloads";
import type { EventTail } from "../events/tail";
import type { BatchHandler } from "../jobs/queue";
import { lockReleasedOnMessageEvents } from "../numbers/locks";
import { findMessagesForFanout } from "./store";

type Found = Awaited<ReturnType<typeof findMessagesForFanout>>[number];

/**
 * One `message.received` row per organization that may see the message, with that organization's
 * view (docs/events.md "A message's team"). `dedupe`: keyed `message:{id}`, for a job that may run twice.
 */
export function messageReceivedEvents({ message, visibility }: Found, dedupe = false): NewEvent[] {
  if (message.hosted_sim_id === null) return [];
  const hostedSimId = message.hosted_sim_id;
  return visibility.map((v) =>
    event.messageReceived(
      { organizationId: v.organizationId, hostedSimId, teamId: v.teamId, dedupeKey: dedupe ? `message:${message.id}` : null },
      {
        message: { ...message, team_id: v.teamId } as unknown as MessageEvent["message"],
        hosted_sim: { id: hostedSimId, number: message.number, alias: v.alias },
        team: v.teamId === null || v.teamName === null ? null : { id: v.teamId, name: v.teamName },
      },
    ),
  );
}

/**
 * Announces inbound messages in the transaction that stores them (storeInboundMessages calls it):
 * `message.received` for every organization that may see each message, then `number.unlocked` for
 * the locks those messages released, after them in log order. The caller notifies the event tail
 * after its commit. `dedupeKey`: set by a job that may run twice, so its appends happen once.
 */
export async function announceInbound(tx: Sql, messageIds: number[], releasedLocks: number[], dedupeKey?: string): Promise<void> {
  if (messageIds.length > 0) {
    const found = await findMessagesForFanout(tx, messageIds);
    await appendEvents(
      tx,
      found.flatMap((f) => messageReceivedEvents(f, dedupeKey !== undefined)),
    );
  }
  await appendEvents(tx, await lockReleasedOnMessageEvents(tx, releasedLocks, dedupeKey));
}

/**
 * The handler of `message.inbound`: jobs an earlier version left behind, when the inbound store
 * enqueued one per batch instead of announcing the messages itself. Each job's appends are keyed
 * (`message:{id}`, `job:{id}`), so a job that runs twice, or a message an old job names again,
 * is announced once.
 */
export function inboundFanoutHandler(deps: {
  sql: Pool;
  events: Pick<EventTail, "notify">;
}): BatchHandler<{ message_ids?: number[]; message_id?: number; released_locks?: number[] }> {
  // `message_id`: jobs enqueued before batches, one message each.
  return async (jobs) => {
    await deps.sql.begin(async (tx) => {
      for (const job of jobs) {
        const ids = job.payload.message_ids ?? (job.payload.message_id === undefined ? [] : [job.payload.message_id]);
        await announceInbound(tx, ids, job.payload.released_locks ?? [], `job:${job.id}`);
      }
    });
    deps.events.notify();
  };
}
