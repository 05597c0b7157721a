import type { Mailer } from "../alerts/notify";
import type { Pool } from "../db/client";
import { JOB_REMOVED, type JobHandler, type JobOutcome, type JobQueue, RetryAfter } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import type { SecretBox } from "../lib/secret-box";
import type { AttemptCaches } from "./attempt-caches";
import { type DeliveryForAttempt, type FinishedAttempt, loadDeliveriesForAttempt, recordAttempts } from "./delivery-store";
import type { EndpointLimiter, Slot } from "./endpoint-limiter";
import { disableIntegration } from "./failing";
import { type AttemptResult, postWebhook } from "./http";
import { judgeAttempt } from "./retry-policy";
import { SIGNATURE_HEADERS, type SigningKey, signatureHeaders } from "./signing";
import type { Lookup } from "./ssrf";

export type DeliveryDeps = {
  sql: Pool;
  jobs: JobQueue;
  logger: Logger;
  metrics: Metrics;
  mailer: Mailer;
  secrets: SecretBox;
  limiter: EndpointLimiter;
  allowPrivate: boolean;
  disableAfterSeconds: number;
  lookup?: Lookup;
  clock: Clock;
  /** Signing keys kept for a few seconds, and the SSRF guard (attempt-caches.ts). */
  caches: AttemptCaches;
};

const RESERVED = new Set<string>([...SIGNATURE_HEADERS, "content-type", "content-length", "host", "transfer-encoding", "connection"]);

/** Integration headers, minus any that would replace the signature or framing headers. */
export function customHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !RESERVED.has(name.toLowerCase())));
}

/**
 * One signed POST to a target, after the SSRF guard has looked at the address it resolves to
 * now (a URL accepted at create time may resolve elsewhere later), sent to that address. Used by
 * deliveries and by the synchronous test event.
 */
export async function sendSigned(
  deps: Pick<DeliveryDeps, "caches" | "clock">,
  t: { url: string; headers: Record<string, string>; timeoutSeconds: number; key: SigningKey; eventId: string; body: string },
): Promise<AttemptResult> {
  const target = await deps.caches.resolveTarget(t.url);
  if ("refused" in target)
    return { ok: false, httpStatus: null, responseBody: null, responseTimeMs: 0, error: `target refused: ${target.refused}`, retryAfterMs: null };
  const headers = { ...customHeaders(t.headers), ...signatureHeaders(t.key, t.eventId, t.body, deps.clock.now()) };
  return postWebhook({ url: t.url, headers, body: t.body, timeoutMs: t.timeoutSeconds * 1000, connectTo: target.connectTo });
}

/**
 * The signing key, or a failed attempt when the secret cannot be opened (SECRETS_KEY changed or
 * lost): such a delivery is retried and logged like any failure instead of looping on the job queue.
 */
export async function openSigningKey(deps: Pick<DeliveryDeps, "caches" | "logger">, sealed: string): Promise<SigningKey | AttemptResult> {
  try {
    return await deps.caches.key(sealed);
  } catch (e) {
    deps.logger.error({ err: (e as Error).message }, "webhook secret cannot be opened; regenerate it or restore SECRETS_KEY");
    const error = "the signing secret cannot be read (was SECRETS_KEY changed?); regenerate the secret";
    return { ok: false, httpStatus: null, responseBody: null, responseTimeMs: 0, error, retryAfterMs: null };
  }
}

/** Waits for a slot of the endpoint, or throws to put the attempt off (the job path's RetryAfter). */
export type AcquireSlot = (endpoint: string) => Promise<Slot>;

async function attemptDelivery(deps: DeliveryDeps, d: DeliveryForAttempt, acquire: AcquireSlot): Promise<AttemptResult> {
  const slot = await acquire(String(d.integration_id));
  let result: AttemptResult | undefined;
  try {
    const key = await openSigningKey(deps, d.secret_sealed);
    if ("ok" in key) return (result = key);
    result = await sendSigned(deps, {
      url: d.url,
      headers: d.headers,
      timeoutSeconds: d.timeout_seconds,
      key,
      eventId: d.event_id,
      body: d.body,
    });
    return result;
  } finally {
    slot.release(result?.responseTimeMs ?? 0);
  }
}

/**
 * Makes the next attempt of a delivery and judges it (retry policy, 410 and the disable period),
 * disabling the integration when the verdict says so: what is to be recorded (recordAttempts).
 * An inactive integration's delivery is abandoned without a request.
 */
export async function makeAttempt(deps: DeliveryDeps, d: DeliveryForAttempt, acquire: AcquireSlot, jobId: number | null): Promise<FinishedAttempt> {
  const attempt = d.attempts + 1;
  const base = { integrationId: d.integration_id, deliveryId: d.id, eventId: d.event_id, eventType: d.event_type, messageId: d.message_id, attempt, jobId };
  if (!d.is_active) {
    deps.metrics.webhookDeliveries.inc({ outcome: "abandoned" });
    const error = "integration is inactive; delivery abandoned";
    return { ...base, status: "failed", httpStatus: null, responseBody: null, responseTimeMs: null, error, retryAt: null, reached: null };
  }
  const result = await attemptDelivery(deps, d, acquire);
  const verdict = judgeAttempt(result, attempt, d.retry_count, d.failing_too_long);
  const disable = verdict.status === "failed" ? verdict.disable : null;
  // Disabled before the attempt is logged: whoever sees the 410 in the log sees the integration inactive.
  if (disable) await disableIntegration(deps, d.integration_id, disable);
  deps.metrics.webhookDeliveries.inc({ outcome: verdict.status });
  if (verdict.status === "failed")
    deps.logger.warn({ integration: d.integration_id, delivery: d.id, event: d.event_id, attempt, err: result.error }, "webhook delivery gave up");
  return {
    ...base,
    status: verdict.status,
    httpStatus: result.httpStatus,
    responseBody: result.responseBody,
    responseTimeMs: result.responseTimeMs,
    error: disable ? `${result.error ?? "failed"}; integration disabled: ${disable}` : result.error,
    retryAt: verdict.status === "retrying" ? new Date(deps.clock.now() + verdict.delayMs) : null,
    reached: result.ok ? "succeeded" : "failed",
  };
}

/**
 * The job path's attempt (retries, redeliveries, replays, and first attempts whose instance died
 * or handed them back): one attempt, recorded with its job settled in the same statement. A busy
 * slow endpoint sends the job back to the queue instead of holding a worker slot.
 */
export async function runDelivery(deps: DeliveryDeps, deliveryId: number, jobId: number | null = null): Promise<JobOutcome> {
  const [d] = await loadDeliveriesForAttempt(deps.sql, [deliveryId], deps.disableAfterSeconds);
  if (!d || d.status === "succeeded" || d.status === "failed") return;
  const done = await makeAttempt(
    deps,
    d,
    async (endpoint) => {
      const slot = await deps.limiter.acquire(endpoint);
      if ("retryInMs" in slot) throw new RetryAfter(slot.retryInMs, "endpoint at its concurrency limit");
      return slot;
    },
    jobId,
  );
  await recordAttempts(deps.sql, [done]);
  return jobId === null ? undefined : JOB_REMOVED;
}

/** The handler of `webhook.delivery` (registered by server/jobs/workers.ts). */
export const deliveryHandler =
  (deps: DeliveryDeps): JobHandler<{ delivery_id: number }> =>
  (job) =>
    runDelivery(deps, job.payload.delivery_id, job.id);
