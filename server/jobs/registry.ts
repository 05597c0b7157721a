/**
 * Every job queue of the server, in one table: what its jobs mean, who enqueues them, who runs
 * them and how. The queue module refuses to enqueue, insert (enqueueJobs) or register a queue that
 * is not listed here, and server/jobs/workers.ts must name a handler for every one of them (its
 * type says so), so this table cannot fall behind the code. docs/architecture.md "Job queues" is
 * checked against it by test/unit/job-registry.test.ts.
 */
export type QueueSpec = {
  description: string;
  /** Modules that enqueue jobs of this queue (through `enqueue` or an `enqueueJobs` fragment). */
  producers: string[];
  /** No module enqueues these any more: the handler finishes jobs an earlier version left in the table. */
  legacy?: true;
  /** The module whose exported handler runs the jobs (registered by server/jobs/workers.ts). */
  handler: string;
  /** Jobs handed to one handler call (registerBatch); absent: one job per call. */
  batchSize?: number;
  /** Handler calls in flight at once per instance (default 4). */
  concurrency?: number;
  /** How long a claimed job may run before another instance may claim it again (default 60 s). */
  visibilitySeconds?: number;
  /** Attempts before a job is marked dead (default 10). */
  maxAttempts?: number;
};

export const QUEUES = {
  "device_sms.process": {
    description: "Turns SMS a device submitted into messages (one job per intake batch, or per device whose SIM was just verified)",
    producers: ["server/devices/sms-store.ts"],
    handler: "server/devices/sms-process.ts",
    batchSize: 100,
    // Two at once: batches on other numbers overlap (those on one number queue on its row), and a
    // backlog drains about a quarter faster than one at a time now that the batch announces its
    // messages itself (docs/benchmarks.md, session of 2026-11-27). Several instances do the same.
    concurrency: 2,
    // Short: after a crash the jobs the dead instance held come back within this time.
    visibilitySeconds: 20,
  },
  "message.inbound": {
    description:
      "Announces inbound messages that an earlier version stored and left to this job (the inbound store now appends their events in its own transaction): message.received, and number.unlocked for the locks they released",
    producers: [],
    legacy: true,
    handler: "server/messages/fanout.ts",
    batchSize: 50,
    concurrency: 8,
    visibilitySeconds: 30,
  },
  "webhook.delivery": {
    description:
      "One attempt at one webhook delivery: retries (enqueued with the first attempt's outcome), redeliveries, and first attempts the dispatcher handed over untried (its endpoint's lane too long or too slow, or stopping); the log consumer's instance makes first attempts itself, with no job",
    producers: ["server/webhooks/delivery-store.ts", "server/webhooks/live-store.ts"],
    handler: "server/webhooks/delivery.ts",
    // Jobs waiting for a busy endpoint do not hold a slot (endpoint-limiter.ts), so many endpoints at their cap still leave room.
    concurrency: 256,
    // Longer than the longest attempt (120 s timeout), so a live attempt is never claimed twice.
    visibilitySeconds: 180,
    // Job attempts are wake-ups, not delivery attempts (a delivery sent back because its endpoint
    // is busy uses one too); the delivery counts real attempts itself, so this is out of reach.
    maxAttempts: 1_000_000,
  },
  "webhook.replay": {
    description:
      "One attempt at one replayed webhook delivery (POST .../replay): the webhook.delivery handler, few at once, so a replay holds few of an endpoint's slots and never stands in the live queue",
    producers: ["server/webhooks/delivery-store.ts"],
    handler: "server/webhooks/delivery.ts",
    concurrency: 4,
    visibilitySeconds: 180,
    maxAttempts: 1_000_000,
  },
  "message.outbound.provider": {
    description: "Hands a pool-number message to the provider API, retried with OUTBOUND_PROVIDER_RETRY_SECONDS backoff",
    producers: ["server/messages/outbound.ts", "server/messages/dispatch.ts"],
    handler: "server/messages/outbound-jobs.ts",
    concurrency: 4,
    visibilitySeconds: 30,
    maxAttempts: 6,
  },
  "message.outbound.device-timeout": {
    description:
      "Ends a device send still queued: expired at its expires_at (waiting for its phone or handed to it), else failed when its phone has not picked it up OUTBOUND_DEVICE_TIMEOUT_SECONDS after the pacer handed it over; a batch in one transaction",
    producers: ["server/messages/outbound.ts", "server/messages/dispatch.ts", "server/messages/pacer.ts"],
    handler: "server/messages/outbound-jobs.ts",
    // A bulk send expiring at once: 1,000 sends are two calls of one transaction each, one call at
    // a time (the batch's quota give-back locks the organizations' monthly rows in key order,
    // outbound-store.ts moveStatuses, so a second at once would not deadlock; it is not needed).
    batchSize: 500,
    concurrency: 1,
    visibilitySeconds: 30,
  },
  "message.outbound.dispatch": {
    description:
      "Sends scheduled messages at their send_at (scheduled → queued, then the provider job, or the SIM's pacer in the same transaction), or expires them when the job runs after expires_at",
    producers: ["server/messages/outbound.ts"],
    handler: "server/messages/outbound-jobs.ts",
    // One transaction moves every due send of a batch: 1,000 sends due a second are a few batches, not 1,000 transactions.
    // One batch at a time: a batch sees every send it queues, so each SIM's sends go oldest first.
    batchSize: 500,
    concurrency: 1,
    visibilitySeconds: 30,
  },
  "message.outbound.pace": {
    description:
      "Hands SIMs' waiting device sends to their phones as their sending policies allow (the pacer, under the SIMs' sim_pacing row locks), and enqueues each SIM's next slot; a send whose phone will never send it (revoked, or no longer holding an active card of its number) fails with its unit given back, or moves within its sender pool",
    producers: ["server/messages/outbound.ts", "server/messages/pacer.ts", "server/devices/retirement.ts"],
    handler: "server/messages/outbound-jobs.ts",
    batchSize: 200,
    concurrency: 2,
    visibilitySeconds: 30,
  },
  "message.outbound.device-online": {
    description:
      "Runs the pacer of every SIM whose sends wait for a device that just came back online (enqueued by the heartbeat write that brought it back, or by its enable), a batch of devices in one transaction",
    producers: ["server/devices/presence-store.ts", "server/devices/management.ts"],
    handler: "server/messages/outbound-jobs.ts",
    // A fleet reconnecting at once: its devices' SIMs are paced together, in the SIMs' lock order.
    batchSize: 200,
    concurrency: 2,
    visibilitySeconds: 30,
  },
  "number.lock-expiry": {
    description: "Ends a number lock at its locked_until (unless extended or released since) and announces it",
    producers: ["server/numbers/locks.ts"],
    handler: "server/numbers/locks.ts",
    concurrency: 2,
    visibilitySeconds: 30,
  },
  "maintenance.retention": {
    description: "Hourly clean-up of expired records; enqueues the next hour's run first (one per hour across instances by dedupe key)",
    producers: ["server/maintenance/retention.ts"],
    handler: "server/maintenance/retention.ts",
    concurrency: 1,
    visibilitySeconds: 600,
  },
} as const satisfies Record<string, QueueSpec>;

export type QueueName = keyof typeof QUEUES;
export type Registry = Readonly<Record<string, QueueSpec>>;

export const DEFAULT_CONCURRENCY = 4;
export const DEFAULT_VISIBILITY_SECONDS = 60;
export const DEFAULT_MAX_ATTEMPTS = 10;

/** The spec of `queue`, or an error naming the registry: a queue nobody listed is a bug, not a job. */
export function queueSpec(registry: Registry, queue: string): QueueSpec {
  const spec = Object.hasOwn(registry, queue) ? registry[queue] : undefined;
  if (!spec) throw new Error(`job queue "${queue}" is not in the registry (server/jobs/registry.ts)`);
  return spec;
}

/** The "Job queues" table of docs/architecture.md, as the registry says it. */
export function queueTable(registry: Registry = QUEUES): string {
  const options = (s: QueueSpec) =>
    [
      s.batchSize === undefined ? "one job per call" : `batches of ${s.batchSize}`,
      `concurrency ${s.concurrency ?? DEFAULT_CONCURRENCY}`,
      `visibility ${s.visibilitySeconds ?? DEFAULT_VISIBILITY_SECONDS} s`,
      `max attempts ${s.maxAttempts ?? DEFAULT_MAX_ATTEMPTS}`,
    ].join(", ");
  const rows = Object.entries(registry).map(
    ([name, s]) =>
      `| \`${name}\` | ${s.description} | ${s.legacy ? "none now (jobs left by an earlier version)" : s.producers.map((p) => `\`${p}\``).join(", ")} | \`${s.handler}\` | ${options(s)} |`,
  );
  return ["| Queue | What a job does | Enqueued by | Handled by | Options |", "|---|---|---|---|---|", ...rows].join("\n");
}
