import { createGroupCommit } from "../lib/group-commit";
import { type DeliveryDeps, makeAttempt } from "./delivery";
import type { DeliveryForAttempt, FinishedAttempt } from "./delivery-store";
import { recordAttempts } from "./delivery-store";
import { DELIVERY_QUEUE } from "./forwarding";

export const DISPATCH_TIMING = {
  /** Past this many deliveries waiting in one lane, the newest go back to the job queue (a stuck endpoint must not fill memory). */
  maxQueued: 5_000,
  /** A delivery that waited this long for its endpoint goes back to the job queue with the rest of its lane. */
  maxWaitMs: 30_000,
  /**
   * Nor is an attempt started on a job whose lease may end within this (its renewals came late,
   * as under overload): once it lapses another worker could make the same attempt.
   */
  minLeaseMs: 5_000,
  /** Attempts recorded per statement at most. */
  recordBatch: 500,
};

/** A live delivery whose job this instance holds (claimed at its creation, JobQueue.hold). */
export type Handoff = { delivery: DeliveryForAttempt; jobId: number };

type Queued = Handoff & { since: number };
type Lane = { queue: Queued[]; head: number; running: number };

/**
 * First attempts of live deliveries, made in this process straight from the log consumer: one
 * lane per endpoint (integration), a FIFO drained by at most `cap` attempts at once, each slot
 * of the endpoint limiter waited for in memory (shared with the job path's retries, so an
 * endpoint never gets more than `cap` at once). Waiting for a slot is neither an attempt nor a
 * database round trip. Outcomes are written by group commit, many attempts per statement
 * (recordAttempts), each settling its job; a failure is released to the job queue until its
 * retry is due, so retries, like redeliveries and replays, run on the job path.
 *
 * A lane never delays another: each endpoint has its own FIFO and slots. A stuck endpoint's lane
 * hands back to the job queue what has waited too long or does not fit (the job path puts it off
 * without holding a worker). If the process dies, the jobs it held are free again within a
 * lease (server/jobs/queue.ts), so every delivery is attempted at least once.
 */
export function createDispatcher(deps: DeliveryDeps & { cap: number; timing?: Partial<typeof DISPATCH_TIMING> }) {
  const timing = { ...DISPATCH_TIMING, ...deps.timing };
  const lanes = new Map<number, Lane>();
  const loops = new Set<Promise<void>>();
  let stopped = false;
  const records = createGroupCommit(
    async (attempts: FinishedAttempt[]) => {
      await recordAttempts(deps.sql, attempts);
      return attempts.map(() => undefined);
    },
    { maxBatch: timing.recordBatch },
  );

  const waiting = (lane: Lane) => lane.queue.length - lane.head;

  function takeAll(lane: Lane): Queued[] {
    const rest = lane.queue.slice(lane.head);
    lane.queue = [];
    lane.head = 0;
    return rest;
  }

  /** The job path runs them instead (a lapsed lease would too, later). */
  function handBack(items: Queued[]) {
    if (items.length === 0) return;
    deps.logger.info({ deliveries: items.length }, "webhook deliveries handed back to the job queue (endpoint busy or stopping)");
    void deps.jobs
      .release(items.map((i) => i.jobId))
      .catch((e) => deps.logger.warn({ err: (e as Error).message }, "webhook deliveries not handed back; their leases lapse"));
  }

  function record(item: Queued, done: FinishedAttempt) {
    void records
      .submit(done)
      .catch((e) =>
        deps.logger.warn({ err: (e as Error).message, delivery: item.delivery.id }, "webhook attempt not recorded; its lease lapses and it is tried again"),
      )
      .finally(() => deps.jobs.unhold([item.jobId]));
  }

  async function drainLane(integrationId: number, lane: Lane) {
    try {
      while (!stopped && waiting(lane) > 0) {
        const item = lane.queue[lane.head++]!;
        if (lane.head > 1024 && lane.head * 2 > lane.queue.length) lane.queue = takeAll(lane);
        if (deps.clock.now() - item.since > timing.maxWaitMs || deps.jobs.leaseLeft(item.jobId) < timing.minLeaseMs) {
          handBack([item, ...takeAll(lane)]);
          break;
        }
        try {
          record(item, await makeAttempt(deps, item.delivery, (endpoint) => deps.limiter.wait(endpoint), item.jobId));
        } catch (e) {
          deps.jobs.unhold([item.jobId]);
          deps.logger.warn({ err: (e as Error).message, delivery: item.delivery.id }, "webhook attempt failed to run; its lease lapses and it is tried again");
        }
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
    /** Takes over the first attempts of deliveries whose jobs this instance claimed at their creation. */
    dispatch(handoffs: Handoff[]) {
      if (handoffs.length === 0) return;
      deps.jobs.hold(
        DELIVERY_QUEUE,
        handoffs.map((h) => h.jobId),
      );
      if (stopped) return handBack(handoffs.map((h) => ({ ...h, since: 0 })));
      const since = deps.clock.now();
      const touched = new Map<number, Lane>();
      for (const h of handoffs) {
        const id = h.delivery.integration_id;
        let lane = lanes.get(id);
        if (!lane) lanes.set(id, (lane = { queue: [], head: 0, running: 0 }));
        lane.queue.push({ ...h, since });
        touched.set(id, lane);
      }
      for (const [id, lane] of touched) {
        if (waiting(lane) > timing.maxQueued) handBack(lane.queue.splice(lane.head + timing.maxQueued));
        start(id, lane);
      }
    },
    /** Deliveries waiting for or in an attempt in this process, per integration. */
    backlog: () => new Map([...lanes].map(([id, lane]) => [id, waiting(lane) + lane.running])),
    resume() {
      stopped = false;
    },
    /** Hands what waits back to the job queue, lets the attempts under way finish and records them. */
    async stop() {
      stopped = true;
      for (const lane of lanes.values()) handBack(takeAll(lane));
      await Promise.allSettled([...loops]);
      await records.flush();
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
