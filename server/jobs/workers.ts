import type { Config } from "../config";
import type { Database, Pool } from "../db/client";
import { deviceSmsHandler } from "../devices/sms-process";
import type { EventTail } from "../events/tail";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/logger";
import { retentionHandler } from "../maintenance/retention";
import { inboundFanoutHandler } from "../messages/fanout";
import { outboundHandlers } from "../messages/outbound-jobs";
import { lockExpiryHandler } from "../numbers/locks";
import type { BatchHandler, JobHandler, JobQueue } from "./queue";
import type { QueueName } from "./registry";

// Each queue's payload type is its handler's; the table only pairs handlers with names.
type Worker = { batch: BatchHandler<any> } | { one: JobHandler<any>; backoff?: (attempt: number) => number };

export type WorkerDeps = {
  sql: Pool;
  jobs: JobQueue;
  clock: Clock;
  /** The event log's tail: handlers that append events wake every instance after their commit. */
  events: EventTail;
  config: Config;
  logger: Logger;
  /** The webhook engine's delivery handler (it holds the secret box and the endpoint limiter). */
  deliver: JobHandler<{ delivery_id: number }>;
  /** The database's vacuum (the hourly clean-up's last step; embedded only). */
  vacuum?: Database["vacuum"];
};

/**
 * Every queue's handler, by queue name: the type makes this table name exactly the queues of the
 * registry, so a queue cannot be enqueued without a worker here. The handlers live in their
 * features; this is the one place that registers them (services.ts calls it once per instance).
 */
export function workers(deps: WorkerDeps): Record<QueueName, Worker> {
  const outbound = outboundHandlers(deps);
  return {
    "device_sms.process": { batch: deviceSmsHandler(deps) },
    "message.inbound": { batch: inboundFanoutHandler(deps) },
    "webhook.delivery": { one: deps.deliver },
    "webhook.replay": { one: deps.deliver },
    "message.outbound.provider": { one: outbound.send, backoff: outbound.backoff },
    "message.outbound.device-timeout": { batch: outbound.deviceTimeouts },
    "message.outbound.dispatch": { batch: outbound.dispatch },
    "message.outbound.pace": { batch: outbound.pace },
    "message.outbound.device-online": { batch: outbound.devicesOnline },
    "number.lock-expiry": { one: lockExpiryHandler(deps) },
    "maintenance.retention": {
      one: retentionHandler({
        ...deps,
        logRetentionDays: deps.config.WEBHOOK_LOG_RETENTION_DAYS,
        eventRetentionDays: deps.config.EVENT_RETENTION_DAYS,
      }),
    },
  };
}

/** Registers every queue's handler on the instance's queue, with the options the registry gives it. */
export function registerWorkers(deps: WorkerDeps) {
  for (const [queue, w] of Object.entries(workers(deps)) as [QueueName, Worker][]) {
    if ("batch" in w) deps.jobs.registerBatch(queue, w.batch);
    else deps.jobs.register(queue, w.one, { backoff: w.backoff });
  }
}
