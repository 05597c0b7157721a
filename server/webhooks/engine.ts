import type { Mailer } from "../alerts/notify";
import type { Config } from "../config";
import { isForeignKeyViolation, type Pool } from "../db/client";
import { event } from "../events/catalog";
import type { EventTail } from "../events/tail";
import type { JobQueue } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import type { SecretBox } from "../lib/secret-box";
import { createAttemptCaches } from "./attempt-caches";
import { createLogConsumer } from "./consumer";
import { type DeliveryDeps, deliveryHandler, openSigningKey, sendSigned } from "./delivery";
import { insertLog } from "./delivery-store";
import { createDispatcher } from "./dispatcher";
import { createEndpointLimiter } from "./endpoint-limiter";
import { newTestEventId, testEvent } from "./events";
import { checkTarget } from "./ssrf";

/** Deliveries in flight at once per endpoint (integration) in one process. */
export const ENDPOINT_CONCURRENCY = 16;

export type TestResult = { success: boolean; http_status: number; response_body: string; response_time_ms: number; error: string | null };

/**
 * The webhook feature's moving parts, built once with the services: the secret box, the log
 * consumer that matches events to integrations and hands their first attempts to the dispatcher
 * (per-endpoint lanes in this process, outcomes stored afterwards), the delivery handler of the job path (registered by
 * server/jobs/workers.ts for the live and the replay queue), the SSRF check used by the routes,
 * and the test send.
 */
export function createWebhookEngine(deps: {
  config: Config;
  sql: Pool;
  jobs: JobQueue;
  events: EventTail;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  mailer: Mailer;
  secrets: SecretBox;
}) {
  const { secrets } = deps;
  const delivery: DeliveryDeps = {
    ...deps,
    secrets,
    limiter: createEndpointLimiter({ cap: ENDPOINT_CONCURRENCY, maxWaiting: ENDPOINT_CONCURRENCY * 8 }),
    allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE,
    disableAfterSeconds: deps.config.WEBHOOK_DISABLE_AFTER_DAYS * 86_400,
    caches: createAttemptCaches({ clock: deps.clock, allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE, open: secrets.open }),
  };
  const dispatcher = createDispatcher({ ...delivery, cap: ENDPOINT_CONCURRENCY });
  const consumer = createLogConsumer({
    sql: deps.sql,
    events: deps.events,
    clock: deps.clock,
    logger: deps.logger,
    owner: deps.jobs.workerId,
    disableAfterSeconds: delivery.disableAfterSeconds,
    deliver: (items) => dispatcher.dispatch(items),
    abandon: () => dispatcher.abandon(),
  });

  /**
   * Sends a signed `webhook.test` now and logs it. Never throws for anything the target does:
   * a refused address, a timeout or a dead host come back as success false.
   */
  async function sendTest(integration: {
    id: number;
    name: string;
    url: string;
    headers: Record<string, string>;
    timeout_seconds: number;
    secret_sealed: string;
  }) {
    const eventId = newTestEventId();
    const body = JSON.stringify(testEvent(eventId, new Date(deps.clock.now()).toISOString(), integration));
    const key = await openSigningKey(delivery, integration.secret_sealed);
    const target = { url: integration.url, headers: integration.headers, timeoutSeconds: integration.timeout_seconds, eventId, body };
    const r = "ok" in key ? key : await sendSigned(delivery, { ...target, key });
    // Deleted while the test was on its way: the answer still says how it went; there is no log to keep it in.
    await insertLog(deps.sql, {
      integrationId: integration.id,
      deliveryId: null,
      eventId,
      eventType: event.webhookTest.type,
      messageId: null,
      attempt: 1,
      status: r.ok ? "succeeded" : "failed",
      httpStatus: r.httpStatus,
      responseBody: r.responseBody,
      responseTimeMs: r.responseTimeMs,
      error: r.error,
    }).catch((e) => {
      if (!isForeignKeyViolation(e, "webhook_delivery_logs_webhook_integration_id_fkey")) throw e;
    });
    const result: TestResult = {
      success: r.ok,
      http_status: r.httpStatus ?? 0,
      response_body: r.responseBody ?? "",
      response_time_ms: r.responseTimeMs,
      error: r.error,
    };
    return result;
  }

  return {
    secrets,
    sendTest,
    deliver: deliveryHandler(delivery),
    /** Follows the event log, making deliveries (instances that run workers). */
    async start() {
      dispatcher.resume();
      await consumer.start();
    },
    async stop() {
      await consumer.stop();
      await dispatcher.stop();
      await consumer.release();
    },
    /** Live deliveries waiting for or in their first attempt in this process, per integration. */
    backlog: () => dispatcher.backlog(),
    /** How many live deliveries went to the job queue untried (their endpoint busy, or stopping). */
    handedOver: () => dispatcher.handedOver(),
    /** How far this process has read the log and recorded every delivery of it (undefined: another instance owns the consumer). */
    progress: () => consumer.progress(),
    /** Wakes this instance's delivery workers after deliveries were created outside the consumer. */
    wakeWorkers: () => deps.jobs.wake(),
    /** The SSRF verdict on a target URL under this server's WEBHOOK_ALLOW_PRIVATE. */
    checkTarget: (url: URL) => checkTarget(url, { allowPrivate: delivery.allowPrivate, lookup: delivery.lookup }),
  };
}

export type WebhookEngine = ReturnType<typeof createWebhookEngine>;
