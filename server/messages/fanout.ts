import type { Pool } from "../db/client";
import type { BatchHandler } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { announceLocksReleasedOnMessage } from "../numbers/locks";
import type { Publish } from "../realtime/bus";
import { enqueueWebhookDeliveries } from "../webhooks/forwarding";
import { findMessagesForFanout } from "./store";

/**
 * Announces stored inbound messages, many jobs' worth at a time (storeInboundMessages enqueues
 * one job per batch it stores, and a backlog of jobs is claimed in batches): `message.received` to
 * every organization that may see each message, with that organization's team of the message
 * (and to the number's channel, limited to that organization), after the webhook deliveries, then
 * `number.unlocked` for the locks those messages released (`released_locks`). Runs on the
 * job queue, so a crash in between means the job runs again: events are at least once, and
 * deliveries are created once (enqueueWebhookDeliveries is idempotent per message).
 */
export function inboundFanoutHandler(deps: {
  sql: Pool;
  publish: Publish;
  clock: Clock;
}): BatchHandler<{ message_ids?: number[]; message_id?: number; released_locks?: number[] }> {
  // `message_id`: jobs enqueued before batches, one message each.
  return async (jobs) => {
    const ids = jobs.flatMap((job) => job.payload.message_ids ?? (job.payload.message_id === undefined ? [] : [job.payload.message_id]));
    const found = await findMessagesForFanout(deps.sql, ids);
    const released = jobs.flatMap((job) => job.payload.released_locks ?? []);
    await enqueueWebhookDeliveries(
      deps.sql,
      found.map((f) => f.message),
      deps.clock.now(),
    );
    for (const { message, visibility } of found) {
      // Each organization sees the message with its one team (docs/events.md "A message's team"), as its history shows it.
      const seen = visibility.map((v) => ({ v, data: { message: { ...message, team_id: v.teamId } } }));
      for (const { v, data } of seen) {
        deps.publish([`private-organization.${v.organizationId}`, ...(v.teamId === null ? [] : [`private-team.${v.teamId}`])], "message.received", data);
      }
      for (const { v, data } of seen) {
        deps.publish(`private-number.${message.hosted_sim_id}`, "message.received", data, { organizations: [v.organizationId] });
      }
    }
    // After the messages that released them (their deliveries exist, their events are out).
    await announceLocksReleasedOnMessage(deps, released);
  };
}
