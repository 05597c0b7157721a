import { createGroupCommit } from "../lib/group-commit";
import { type DeliveryDeps, makeAttempt } from "./delivery";
import type { DeliveryForAttempt, FinishedAttempt, IntegrationForAttempt } from "./delivery-store";
import { type FirstAttempt, loadIntegrationsForAttempt, recordFirstAttempts } from "./live-store";

export const DISPATCH_TIMING = {
  /**
   * Past this many deliveries waiting in a slow lane (its oldest waiting over `slowHeadMs`), the
   * newest go to the job queue: a stuck endpoint must not fill memory, nor hold the consumer's
   * read-ahead (CONSUMER_TIMING.maxOutstanding) that every endpoint shares.
   */
  maxQueued: 5_000,
  slowHeadMs: 2_000,
  /** A lane that keeps up (a fast endpoint read ahead of) may hold this many before it hands over. */
  maxQueuedFast: 50_000,
  /** A delivery that waited this long for its endpoint goes to the job queue with the rest of its lane. */
  maxWaitMs: 30_000,
  /** Outcomes recorded per statement at most. */
  recordBatch: 500,
  /**
   * A statement of outcomes starts at least this long after the one before it. Nobody waits on
   * a record but the consumer's durable position, so outcomes gather into few statements (at 4,000
   * deliveries a second, about 100 each) instead of one statement per handful.
   */
  recordLingerMs: 25,
  /** A record that failed (the database away) is submitted again after this. */
  recordRetryMs: 1_000,
  /**
   * A lane reads its integration again when what it holds is older than this: a change (URL,
   * headers, secret, deactivation, deletion, made on any instance) reaches the deliveries waiting
   * in the lane within this, not when they were matched (up to maxWaitMs earlier).
   */
  configMaxAgeMs: 500,
};

/**
 * A live delivery (not stored yet) for its first attempt; `settle` is called once its outcome
 * (or its hand-over to the job path) is committed.
 */
/**
 * A live delivery from the log consumer: `settle` once its attempt (or hand-over) is recorded;
 * `owned` while the consumer that read it still surely owns it (false from the moment its lease
 * may have passed to another instance, which reads the event again).
 */
export type LiveItem = { delivery: DeliveryForAttempt; settle: () => void; owned: () => boolean };

type Queued = LiveItem & { since: number };
/** What an attempt takes from its integration: the fields of a delivery that come from it. */
type Config = Omit<IntegrationForAttempt, "id">;
/** `config`: the integration as last read (null: deleted), at `configAt`; `reading` while a read is under way. */
type Lane = {
  queue: Queued[];
  head: number;
  running: number;
  config?: Config | null;
  configAt: number;
  reading?: Promise<Config | null>;
  /** When an attempt of this lane last succeeded: the failure run it read may have ended since. */
  succeededAt?: number;
};

/**
 * First attempts of live deliveries, made in this process straight from the log consumer, before
 * anything of them is stored: one lane per endpoint (integration), a FIFO drained by at most
 * `cap` attempts at once, each slot of the endpoint limiter waited for in memory (shared with the
 * job path's retries, so an endpoint never gets more than `cap` at once). Waiting for a slot is
 * neither an attempt nor a database round trip. Outcomes are written by group commit, many per
 * statement and at most one statement per `recordLingerMs` (recordFirstAttempts: a success is its
 * log record alone; anything else its delivery row, log record and a job when it is to be tried
 * again), so a first attempt that succeeds costs one row in a shared statement.
 * Retries, like redeliveries and replays, run on the job path.
 *
 * A lane never delays another: each endpoint has its own FIFO and slots. A stuck endpoint's lane
 * hands to the job queue (stored untried, due now) what has waited too long or does not fit; the
 * job path puts it off without holding a worker. If the process dies, nothing of what was in
 * memory is lost: the consumer's durable position is still before it (server/webhooks/consumer.ts).
 */
export function createDispatcher(deps: DeliveryDeps & { cap: number; timing?: Partial<typeof DISPATCH_TIMING> }) {
  const timing = { ...DISPATCH_TIMING, ...deps.timing };
  const lanes = new Map<number, Lane>();
  const loops = new Set<Promise<void>>();
  let stopped = false;
  let handedOver = 0;
  const records = createGroupCommit(
    async (attempts: FirstAttempt[]) => {
      await recordFirstAttempts(deps.sql, attempts);
      return attempts.map(() => undefined);
    },
    { maxBatch: timing.recordBatch, lingerMs: timing.recordLingerMs },
  );

  const waiting = (lane: Lane) => lane.queue.length - lane.head;

  function takeAll(lane: Lane): Queued[] {
    const rest = lane.queue.slice(lane.head);
    lane.queue = [];
    lane.head = 0;
    return rest;
  }

  /** Writes an outcome; the item is settled once it is committed. Retried while the process runs. */
  function persist(item: LiveItem, row: FirstAttempt) {
    // Its event belongs to the consumer's next owner now, which attempts it again: a record here
    // (a retry's job, a hand-over's) would make a second delivery of every one of them.
    if (!item.owned()) return;
    records.submit(row).then(
      () => item.settle(),
      (e) => {
        deps.logger.warn({ err: (e as Error).message, event: row.eventId }, "webhook attempt not recorded; trying again");
        if (!stopped) setTimeout(() => persist(item, row), timing.recordRetryMs);
      },
    );
  }

  const recordOf = (item: LiveItem, done: FinishedAttempt): FirstAttempt => ({ ...done, body: item.delivery.body });

  /** Stored untried with a job due now: the job path makes the attempt instead. */
  function handOver(items: Queued[]) {
    if (items.length === 0) return;
    deps.logger.info({ deliveries: items.length }, "webhook deliveries handed to the job queue (endpoint busy or stopping)");
    handedOver += items.length;
    for (const item of items) {
      const d = item.delivery;
      persist(item, {
        integrationId: d.integration_id,
        deliveryId: null,
        eventId: d.event_id,
        eventType: d.event_type,
        messageId: d.message_id,
        attempt: 0,
        status: "pending",
        httpStatus: null,
        responseBody: null,
        responseTimeMs: null,
        error: null,
        retryAt: null,
        reached: null,
        jobId: null,
        body: d.body,
      });
    }
    void records
      .flush()
      .then(() => deps.jobs.wake())
      .catch(() => {});
  }

  /** The lane's integration as it is now: what the lane holds while at most configMaxAgeMs old (no await), else read again, one read at a time per lane. */
  function currentConfig(integrationId: number, lane: Lane): Config | null | Promise<Config | null> {
    if (lane.config !== undefined && deps.clock.now() - lane.configAt < timing.configMaxAgeMs) return lane.config;
    lane.reading ??= loadIntegrationsForAttempt(deps.sql, [integrationId], deps.disableAfterSeconds)
      .then((found) => {
        const row = found.get(integrationId);
        if (row) {
          const { id: _, ...config } = row;
          lane.config = config;
        } else lane.config = null;
        lane.configAt = deps.clock.now();
        return lane.config;
      })
      .finally(() => (lane.reading = undefined));
    return lane.reading;
  }

  async function drainLane(integrationId: number, lane: Lane) {
    try {
      while (!stopped && waiting(lane) > 0) {
        const item = lane.queue[lane.head++]!;
        if (lane.head > 1024 && lane.head * 2 > lane.queue.length) lane.queue = takeAll(lane);
        if (!item.owned()) continue;
        if (deps.clock.now() - item.since > timing.maxWaitMs) {
          handOver([item, ...takeAll(lane)]);
          break;
        }
        let done: FinishedAttempt;
        try {
          // Made with the integration as it is now: its URL, headers, secret and state, not those it had when the event was matched.
          let config = currentConfig(integrationId, lane);
          if (config instanceof Promise) config = await config;
          if (config === null) {
            // Deleted: nothing to attempt, nothing to record (its rows would go with it).
            item.settle();
            continue;
          }
          // A run that a success of this lane ended within the disable period is younger than it,
          // whatever the integration read before that success (or before its record) says.
          const runBroken = lane.succeededAt !== undefined && deps.clock.now() - lane.succeededAt < deps.disableAfterSeconds * 1000;
          const delivery = Object.assign(item.delivery, config, runBroken ? { failing_too_long: false } : {});
          done = await makeAttempt(deps, delivery, (endpoint) => deps.limiter.wait(endpoint), null);
        } catch (e) {
          deps.logger.warn({ err: (e as Error).message, event: item.delivery.event_id }, "webhook attempt failed to run; handed to the job queue");
          handOver([item]);
          continue;
        }
        if (done.reached === "succeeded") lane.succeededAt = deps.clock.now();
        persist(item, recordOf(item, done));
      }
    } finally {
      lane.running--;
      if (lane.running === 0 && waiting(lane) === 0) lanes.delete(integrationId);
    }
  }

  function start(integrationId: number, lane: Lane) {
    // Each loop takes its first delivery before its first await, so this starts one loop per waiting delivery, up to the cap.
    while (lane.running < deps.cap && waiting(lane) > 0) {
      lane.running++;
      const p = drainLane(integrationId, lane);
      loops.add(p);
      void p.finally(() => loops.delete(p));
    }
  }

  return {
    /** Takes over the first attempts of live deliveries, in log order per endpoint. */
    dispatch(items: LiveItem[]) {
      if (items.length === 0) return;
      const since = deps.clock.now();
      if (stopped) return handOver(items.map((i) => ({ ...i, since })));
      const touched = new Map<number, Lane>();
      for (const item of items) {
        const id = item.delivery.integration_id;
        let lane = lanes.get(id);
        if (!lane) lanes.set(id, (lane = { queue: [], head: 0, running: 0, configAt: 0 }));
        lane.queue.push({ ...item, since });
        touched.set(id, lane);
      }
      for (const [id, lane] of touched) {
        const n = waiting(lane);
        const slow = n > timing.maxQueued && since - lane.queue[lane.head]!.since > timing.slowHeadMs;
        if (slow || n > timing.maxQueuedFast) handOver(lane.queue.splice(lane.head + (slow ? timing.maxQueued : timing.maxQueuedFast)));
        start(id, lane);
      }
    },
    /** Deliveries waiting for or in an attempt in this process, per integration. */
    backlog: () => new Map([...lanes].map(([id, lane]) => [id, waiting(lane) + lane.running])),
    /** How many deliveries were handed to the job queue untried since the start (benchmarks). */
    handedOver: () => handedOver,
    /**
     * Forgets what waits, unattempted and unrecorded: this process no longer owns the consumer,
     * whose next owner reads those events again.
     */
    abandon() {
      for (const lane of lanes.values()) takeAll(lane);
    },
    resume() {
      stopped = false;
    },
    /** Hands what waits to the job queue, lets the attempts under way finish and records everything. */
    async stop() {
      stopped = true;
      for (const lane of lanes.values()) handOver(takeAll(lane));
      await Promise.allSettled([...loops]);
      await records.flush();
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
