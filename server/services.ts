import Redis from "ioredis";
import { createMailer } from "./alerts/notify";
import { createCredentials } from "./auth/credentials";
import type { Config } from "./config";
import { type Database, openDatabase } from "./db/client";
import { migrate } from "./db/migrate";
import { createDeviceRuntime } from "./devices/runtime";
import { createLocalBus, createRedisBus } from "./events/bus";
import { createEventTail } from "./events/tail";
import { createEventWaiters } from "./events/waiters";
import { createJobQueue } from "./jobs/queue";
import { registerWorkers } from "./jobs/workers";
import { type Clock, systemClock } from "./lib/clock";
import { createLogger, type Logger } from "./lib/logger";
import { createMetrics } from "./lib/metrics";
import { createLocalRateLimiter, createRedisRateLimiter } from "./lib/rate-limit";
import { createRedisGuard, REDIS_CLIENT_OPTIONS } from "./lib/redis-guard";
import { createSecretBox } from "./lib/secret-box";
import { scheduleRetention } from "./maintenance/retention";
import { createMessageWaiters } from "./messages/waiters";
import { setupRealtime } from "./realtime/setup";
import { createWebhookEngine } from "./webhooks/engine";

/** Everything the server is made of, built once at start (or per test) and closed together. */
export async function createServices(config: Config, opts: { clock?: Clock; logger?: Logger; database?: Database } = {}) {
  const logger = opts.logger ?? createLogger(config.LOG_LEVEL);
  const instanceId = `${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const db = opts.database ?? (await openDatabase(config));
  await migrate(db.sql);
  const clock = opts.clock ?? systemClock;
  // Every request-path use of Redis goes through redisGuard: a short deadline and an in-process fallback.
  const redis = config.REDIS_URL ? new Redis(config.REDIS_URL, REDIS_CLIENT_OPTIONS) : undefined;
  redis?.on("error", () => {});
  const redisGuard = redis ? createRedisGuard(redis) : undefined;
  const bus = config.REDIS_URL
    ? createRedisBus({ url: config.REDIS_URL, prefix: config.REDIS_PREFIX, origin: instanceId, logger })
    : createLocalBus(instanceId);
  await Promise.all([bus.ready(), redisGuard?.ready()]);
  // Credentials: resolving, caching and revoking (server/auth/credentials.ts); revocations reach every instance before the revoker answers.
  const auth = createCredentials({
    sql: db.sql,
    sessionTtlDays: config.SESSION_TTL_DAYS,
    instanceId,
    logger,
    clock,
    redis: config.REDIS_URL ? { url: config.REDIS_URL, prefix: config.REDIS_PREFIX } : undefined,
  });
  await auth.start();
  // The event log's reader on this instance (server/events/): hands every new event to realtime and
  // waiting calls, once the revocations committed before it are applied here.
  const events = createEventTail({ sql: db.sql, bus, logger, beforeHandOn: auth.revocationsCaughtUp });
  await events.start();
  const localLimiter = createLocalRateLimiter(() => clock.now());
  const limiter = redisGuard ? createRedisRateLimiter(redisGuard, config.REDIS_PREFIX, localLimiter) : localLimiter;
  const jobs = createJobQueue({ sql: db.sql, logger, workerId: instanceId, clock });
  const metrics = createMetrics();
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  // Seals webhook signing secrets and the answers kept for Idempotency-Key replays (SECRETS_KEY).
  const secrets = createSecretBox(db.sql, config.SECRETS_KEY);
  const webhooks = createWebhookEngine({ config, sql: db.sql, jobs, events, clock, logger, metrics, mailer, secrets });
  // Every queue's handler, registered here and nowhere else (server/jobs/registry.ts lists the queues).
  registerWorkers({ sql: db.sql, jobs, clock, events, config, logger, deliver: webhooks.deliver, vacuum: db.vacuum });
  // BYOS devices: actors, presence scheduler, heartbeat and SMS group commit (server/devices/runtime.ts).
  const devices = createDeviceRuntime({ sql: db.sql, clock, config, bus, events, mailer, logger, jobs, metrics });
  // Queue depth and age (API.md §3), and the dead jobs an operator should look at (`simhost admin jobs dead`).
  // A scrape collects its gauges at once: the three share one read of the queue.
  let queueStats: ReturnType<typeof jobs.stats> | null = null;
  const readQueue = () => (queueStats ??= jobs.stats().finally(() => (queueStats = null)));
  metrics.gauge("simhost_queue_backlog", "Jobs waiting or running", async () => (await readQueue()).backlog);
  metrics.gauge("simhost_queue_oldest_seconds", "Seconds the oldest due job has waited to be claimed", async () => (await readQueue()).oldestSeconds);
  metrics.gauge("simhost_queue_dead", "Jobs that gave up after their last attempt, kept for an operator", async () => (await readQueue()).dead);
  // Calls waiting for a message (GET /api/numbers/{id}/messages/next), woken by the event tail.
  const waiters = createMessageWaiters({ onEvents: events.onEvents, clock });
  metrics.gauge("simhost_message_waiters", "Calls waiting for a message on this instance", () => waiters.size());
  // Calls waiting for an event (GET /api/events?wait=), woken by this instance's event tail.
  const eventWaiters = createEventWaiters({ events, clock });
  metrics.gauge("simhost_event_waiters", "Calls waiting for an event on this instance", () => eventWaiters.size());
  // A revoked credential's waiting calls end before the revoking request answers, as its sockets do.
  auth.onRevoked((r) => {
    waiters.revoked(r);
    eventWaiters.revoked(r);
  });
  const realtime = await setupRealtime({ config, sql: db.sql, redis: redisGuard, bus, onEvents: events.onEvents, onRevoked: auth.onRevoked, metrics, logger });

  return {
    config,
    db,
    sql: db.sql,
    logger,
    clock,
    instanceId,
    redis,
    redisGuard,
    bus,
    events,
    limiter,
    mailer,
    jobs,
    metrics,
    auth,
    devices,
    webhooks,
    secrets,
    realtime,
    waiters,
    eventWaiters,
    /** Starts background work (job workers, timers). Tests that drive work by hand skip it. */
    start() {
      // WORKERS=0: an instance that serves the API only; other instances run the jobs.
      if (config.WORKERS > 0) {
        jobs.start();
        void webhooks.start().catch((e) => logger.error({ err: (e as Error).message }, "webhook deliveries from the event log not started"));
        void scheduleRetention({ jobs, clock }).catch((e) => logger.warn({ err: (e as Error).message }, "retention run not scheduled"));
      }
      void devices.start().catch((e) => logger.error({ err: (e as Error).message }, "device actors not restored"));
    },
    async close() {
      waiters.close();
      eventWaiters.close();
      await webhooks.stop();
      await events.stop();
      realtime.close();
      await auth.close();
      await devices.stop();
      await jobs.stop();
      await bus.close();
      redis?.disconnect();
      await db.close();
    },
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
