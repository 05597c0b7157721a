import type { Pool } from "../db/client";
import { event } from "../events/catalog";
import { appendEvents, type NewEvent } from "../events/log";
import type { MessageEvent } from "../events/payloads";
import type { EventTail } from "../events/tail";
import type { BatchHandler } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { lockReleasedOnMessageEvents } from "../numbers/locks";
import { findMessagesForFanout } from "./store";

type Found = Awaited<ReturnType<typeof findMessagesForFanout>>[number];

/** One `message.received` row per organization that may see the message, with that organization's view (docs/events.md "A message's team"). */
export function messageReceivedEvents({ message, visibility }: Found): NewEvent[] {
  if (message.hosted_sim_id === null) return [];
  const hostedSimId = message.hosted_sim_id;
  return visibility.map((v) =>
    event.messageReceived(
      { organizationId: v.organizationId, hostedSimId, teamId: v.teamId, dedupeKey: `message:${message.id}` },
      {
        message: { ...message, team_id: v.teamId } as unknown as MessageEvent["message"],
        hosted_sim: { id: hostedSimId, number: message.number, alias: v.alias },
        team: v.teamId === null || v.teamName === null ? null : { id: v.teamId, name: v.teamName },
      },
    ),
  );
}

/**
 * Announces stored inbound messages, many jobs' worth at a time (storeInboundMessages enqueues
 * one job per batch it stores, and a backlog of jobs is claimed in batches): appends
 * `message.received` for every organization that may see each message, then `number.unlocked`
 * for the locks those messages released (`released_locks`), in one transaction. The job row is
 * the outbox: a crash means the job runs again, and the dedupe keys make its appends once.
 */
export function inboundFanoutHandler(deps: {
  sql: Pool;
  events: Pick<EventTail, "notify">;
  clock: Clock;
}): BatchHandler<{ message_ids?: number[]; message_id?: number; released_locks?: number[] }> {
  // `message_id`: jobs enqueued before batches, one message each.
  return async (jobs) => {
    const ids = jobs.flatMap((job) => job.payload.message_ids ?? (job.payload.message_id === undefined ? [] : [job.payload.message_id]));
    const found = await findMessagesForFanout(deps.sql, ids);
    await deps.sql.begin(async (tx) => {
      await appendEvents(tx, found.flatMap(messageReceivedEvents));
      // After the messages that released them, in log order.
      for (const job of jobs) await appendEvents(tx, await lockReleasedOnMessageEvents(tx, job.payload.released_locks ?? [], `job:${job.id}`));
    });
    deps.events.notify();
  };
}
