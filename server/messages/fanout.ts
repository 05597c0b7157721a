import type { Pool } from "../db/client";
import type { JobQueue } from "../jobs/queue";
import type { Publish } from "../realtime/bus";
import { enqueueWebhookDeliveries } from "../webhooks/forwarding";
import { INBOUND_FANOUT_QUEUE } from "./inbound";
import { findMessageForFanout } from "./store";

/**
 * Announces each stored inbound message: `message.received` to every organization that may see
 * it (and to the number's channel, limited to those organizations), then webhook deliveries.
 * Runs on the job queue, so a crash in between means the job runs again: events are at least
 * once, and deliveries are created once (enqueueWebhookDeliveries is idempotent per message).
 */
export function registerInboundFanout(deps: { sql: Pool; jobs: JobQueue; publish: Publish }) {
  deps.jobs.register<{ message_id: number }>(
    INBOUND_FANOUT_QUEUE,
    async (job) => {
      const found = await findMessageForFanout(deps.sql, job.payload.message_id);
      if (!found) return;
      const { message, visibility } = found;
      await deps.sql.begin((tx) => enqueueWebhookDeliveries(tx, message.id));
      const organizations = visibility.map((v) => v.organizationId);
      const channels = [
        ...organizations.map((id) => `private-organization.${id}`),
        ...visibility.filter((v) => v.teamId !== null).map((v) => `private-team.${v.teamId}`),
      ];
      deps.publish(channels, "message.received", { message });
      deps.publish(`private-number.${message.hosted_sim_id}`, "message.received", { message }, { organizations });
    },
    { concurrency: 16, visibilitySeconds: 30 },
  );
}
