import type { Pool } from "../db/client";
import type { JobQueue } from "../jobs/queue";
import type { Publish } from "../realtime/bus";
import { enqueueWebhookDeliveries } from "../webhooks/forwarding";
import { INBOUND_FANOUT_QUEUE } from "./inbound";
import { findMessagesForFanout } from "./store";

/**
 * Announces stored inbound messages, many jobs' worth at a time (storeInboundMessages enqueues
 * one job per batch it stores, and a backlog of jobs is claimed in batches): `message.received` to every organization that may see each message (and to
 * the number's channel, limited to those organizations), then webhook deliveries. Runs on the
 * job queue, so a crash in between means the job runs again: events are at least once, and
 * deliveries are created once (enqueueWebhookDeliveries is idempotent per message).
 */
export function registerInboundFanout(deps: { sql: Pool; jobs: JobQueue; publish: Publish }) {
  // `message_id`: jobs enqueued before batches, one message each.
  deps.jobs.registerBatch<{ message_ids?: number[]; message_id?: number }>(
    INBOUND_FANOUT_QUEUE,
    async (jobs) => {
      const ids = jobs.flatMap((job) => job.payload.message_ids ?? (job.payload.message_id === undefined ? [] : [job.payload.message_id]));
      const found = await findMessagesForFanout(deps.sql, ids);
      if (found.length === 0) return;
      await enqueueWebhookDeliveries(
        deps.sql,
        found.map((f) => f.message),
      );
      for (const { message, visibility } of found) {
        const organizations = visibility.map((v) => v.organizationId);
        const channels = [
          ...organizations.map((id) => `private-organization.${id}`),
          ...visibility.filter((v) => v.teamId !== null).map((v) => `private-team.${v.teamId}`),
        ];
        deps.publish(channels, "message.received", { message });
        deps.publish(`private-number.${message.hosted_sim_id}`, "message.received", { message }, { organizations });
      }
    },
    { batchSize: 50, concurrency: 8, visibilitySeconds: 30 },
  );
}
