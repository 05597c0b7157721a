import Redis from "ioredis";
import { createMailer } from "./alerts/notify";
import { createAuthenticator } from "./auth/caller";
import type { Config } from "./config";
import { type Database, openDatabase } from "./db/client";
import { migrate } from "./db/migrate";
import { createDeviceRuntime } from "./devices/runtime";
import { createJobQueue } from "./jobs/queue";
import { type Clock, systemClock } from "./lib/clock";
import { createLogger, type Logger } from "./lib/logger";
import { createMetrics } from "./lib/metrics";
import { createLocalRateLimiter, createRedisRateLimiter } from "./lib/rate-limit";
import { registerRetention } from "./maintenance/retention";
import { registerInboundFanout } from "./messages/fanout";
import { registerOutboundJobs } from "./messages/outbound-jobs";
import { registerLockExpiry } from "./numbers/locks";
import { createLocalBus, createRedisBus } from "./realtime/bus";
import { setupRealtime } from "./realtime/setup";
import { createWebhookEngine } from "./webhooks/engine";

/** Everything the server is made of, built once at start (or per test) and closed together. */
export async function createServices(config: Config, opts: { clock?: Clock; logger?: Logger; database?: Database } = {}) {
  const logger = opts.logger ?? createLogger(config.LOG_LEVEL);
  const instanceId = `${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const db = opts.database ?? (await openDatabase(config));
  await migrate(db.sql);
  const clock = opts.clock ?? systemClock;
  const redis = config.REDIS_URL ? new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: false }) : undefined;
  redis?.on("error", () => {});
  const bus = config.REDIS_URL
    ? createRedisBus({ url: config.REDIS_URL, prefix: config.REDIS_PREFIX, origin: instanceId, logger })
    : createLocalBus(instanceId);
  await bus.ready();
  const limiter = redis ? createRedisRateLimiter(redis, config.REDIS_PREFIX) : createLocalRateLimiter(() => clock.now());
  const jobs = createJobQueue({ sql: db.sql, logger, workerId: instanceId });
  const metrics = createMetrics();
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  const auth = createAuthenticator({ sql: db.sql, sessionTtlDays: config.SESSION_TTL_DAYS, bus });
  registerInboundFanout({ sql: db.sql, jobs, publish: bus.publish });
  const webhooks = createWebhookEngine({ config, sql: db.sql, jobs, logger, metrics, mailer });
  registerLockExpiry({ sql: db.sql, jobs, publish: bus.publish });
  const retention = registerRetention({ sql: db.sql, jobs, logger, logRetentionDays: config.WEBHOOK_LOG_RETENTION_DAYS, now: () => clock.now() });
  registerOutboundJobs({ sql: db.sql, jobs, publish: bus.publish, config, logger });
  // BYOS devices: actors, presence scheduler, heartbeat and SMS group commit (server/devices/runtime.ts).
  const devices = createDeviceRuntime({ sql: db.sql, clock, config, bus, mailer, logger, jobs, metrics });
  metrics.gauge("simhost_queue_backlog", "Jobs waiting or running", async () => (await jobs.stats()).backlog);
  const realtime = await setupRealtime({ config, sql: db.sql, redis, bus, metrics, logger });

  return {
    config,
    db,
    sql: db.sql,
    logger,
    clock,
    instanceId,
    redis,
    bus,
    publish: bus.publish,
    limiter,
    mailer,
    jobs,
    metrics,
    auth,
    devices,
    webhooks,
    realtime,
    /** Starts background work (job workers, timers). Tests that drive work by hand skip it. */
    start() {
      // WORKERS=0: an instance that serves the API only; other instances run the jobs.
      if (config.WORKERS > 0) {
        jobs.start();
        void retention.schedule().catch((e) => logger.warn({ err: (e as Error).message }, "retention run not scheduled"));
      }
      void devices.start().catch((e) => logger.error({ err: (e as Error).message }, "device actors not restored"));
    },
    async close() {
      realtime.close();
      await devices.stop();
      await jobs.stop();
      await bus.close();
      redis?.disconnect();
      await db.close();
    },
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
