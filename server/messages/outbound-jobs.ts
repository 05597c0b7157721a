import type { Config } from "../config";
import type { Pool } from "../db/client";
import type { EventTail } from "../events/tail";
import type { Job, JobHandler } from "../jobs/queue";
import { RetryAfter } from "../jobs/queue";
import type { Logger } from "../lib/logger";
import { changeStatus } from "./outbound";
import { findOutbound } from "./outbound-store";
import { createProviderClient, type ProviderClient } from "./provider-client";

type Deps = { sql: Pool; events: Pick<EventTail, "notify">; logger: Logger };
type Payload = { message_id: number };

/** Doubling from the configured first delay, capped at 10 minutes, with ±20 % jitter. */
export const providerBackoff = (firstSeconds: number) => (attempt: number) =>
  Math.min(firstSeconds * 1000 * 2 ** (attempt - 1), 600_000) * (0.8 + Math.random() * 0.4);

/**
 * One attempt at handing a pool-number message to the provider. A refusal (4xx) fails the
 * message for good; a retryable answer is retried by the queue until the last attempt, which
 * fails the message with the last error so it never stays `sending` forever.
 */
export async function sendThroughProvider(deps: Deps, provider: ProviderClient, job: Job<Payload>, backoff: (attempt: number) => number) {
  const m = await findOutbound(deps.sql, job.payload.message_id);
  if (!m || (m.status !== "queued" && m.status !== "sending")) return;
  await changeStatus(deps, m.organization_id, m.id, "sending", ["queued"]);
  const outcome = await provider.send({ from: m.from, to: m.to, body: m.text });
  if (outcome.kind === "accepted") {
    await changeStatus(deps, m.organization_id, m.id, "sent", ["queued", "sending"], { externalId: outcome.sid || null });
    return;
  }
  const last = job.attempts >= job.max_attempts;
  if (outcome.kind === "rejected" || last) {
    await changeStatus(deps, m.organization_id, m.id, "failed", ["queued", "sending"], { error: outcome.error });
    return;
  }
  deps.logger.info({ message: m.id, attempt: job.attempts, err: outcome.error }, "provider send will be retried");
  throw new RetryAfter(outcome.retryAfterMs ?? backoff(job.attempts), outcome.error);
}

/** Fails a device send that no device picked up (still `queued`) when its time is up. */
export async function failUnpickedDeviceSend(deps: Pick<Deps, "sql" | "events">, messageId: number, timeoutSeconds: number) {
  const m = await findOutbound(deps.sql, messageId);
  if (m?.status !== "queued") return false;
  const error = `No device picked up the message within ${timeoutSeconds} seconds.`;
  return changeStatus(deps, m.organization_id, messageId, "failed", ["queued"], { error });
}

/** The handlers of the outbound queues (registered by server/jobs/workers.ts), with the provider sends' backoff. */
export function outboundHandlers(deps: Deps & { config: Config; provider?: ProviderClient }) {
  const { config } = deps;
  const provider = deps.provider ?? createProviderClient({ baseUrl: config.PROVIDER_API_URL, authToken: config.PROVIDER_AUTH_TOKEN });
  const backoff = providerBackoff(config.OUTBOUND_PROVIDER_RETRY_SECONDS);
  const send: JobHandler<Payload> = (job) => sendThroughProvider(deps, provider, job, backoff);
  const deviceTimeout: JobHandler<Payload> = async (job) =>
    void (await failUnpickedDeviceSend(deps, job.payload.message_id, config.OUTBOUND_DEVICE_TIMEOUT_SECONDS));
  return { send, backoff, deviceTimeout };
}
