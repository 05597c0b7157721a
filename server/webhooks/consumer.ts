import type { Pool } from "../db/client";
import { highWaterPosition, readEvents } from "../events/log";
import type { EventTail } from "../events/tail";
import type { Claim } from "../jobs/queue";
import type { Clock, Timer } from "../lib/clock";
import type { Logger } from "../lib/logger";
import type { CreatedDelivery } from "./delivery-store";
import { createDeliveries, DELIVERY_QUEUE } from "./forwarding";

/** The row in `event_consumers` holding how far webhook deliveries have been made from the log. */
export const WEBHOOK_CONSUMER = "webhooks";

export const CONSUMER_TIMING = {
  /** Events read (and turned into deliveries) per transaction. */
  batch: 1000,
  /** Runs this often without a wake: after a failed run, or when another instance held the position. */
  pollMs: 1000,
};

/**
 * One step of the whole-log consumer, across every instance at most one at a time: in one
 * transaction, lock the consumer's position (an instance finding it locked does nothing: the
 * holder runs again when it sees the new events), read the events after it, create their
 * deliveries and jobs (claimed by `claimedBy`, which then makes their first attempts), and advance
 * the position. A crash before the commit leaves the position where it was and creates nothing,
 * so each event becomes deliveries exactly once.
 * Returns how many events were read and the deliveries made, or null when another instance holds the position.
 */
export async function consumeEvents(sql: Pool, batch = CONSUMER_TIMING.batch, claimedBy?: Claim): Promise<{ read: number; created: CreatedDelivery[] } | null> {
  return sql.begin(async (tx) => {
    const [at] = await tx<{ txid: string; id: number }[]>`
      select after_txid::text as txid, after_id as id from event_consumers where name = ${WEBHOOK_CONSUMER} for update skip locked`;
    if (!at) return null;
    const events = await readEvents(tx, at, {}, batch);
    if (events.length === 0) return { read: 0, created: [] };
    const created = await createDeliveries(tx, events, { origin: "live", queue: DELIVERY_QUEUE, claimedBy });
    const last = events[events.length - 1]!.position;
    // The commit does not wait for the WAL flush: lost to a crash, it leaves the position where it
    // was with no deliveries made, and the events are read again (at least once, same webhook-id).
    await tx`
      with c as (update event_consumers set after_txid = ${last.txid}::xid8, after_id = ${last.id}, updated_at = now() where name = ${WEBHOOK_CONSUMER})
      select set_config('synchronous_commit', 'off', true)`;
    return { read: events.length, created };
  });
}

/**
 * Runs the consumer whenever this instance's event tail hands on new events (every instance sees
 * every event, so the one holding the position always runs again), and on a slow poll. The
 * deliveries it makes go to `deliver` after the commit (the dispatcher's first attempts); with
 * `claim` unset they are left to the job queue's workers.
 */
export function createLogConsumer(deps: {
  sql: Pool;
  events: EventTail;
  clock: Clock;
  logger: Logger;
  claim?: Claim;
  deliver: (created: CreatedDelivery[]) => Promise<void>;
  timing?: Partial<typeof CONSUMER_TIMING>;
}) {
  const timing = { ...CONSUMER_TIMING, ...deps.timing };
  let stopped = true;
  let running: Promise<void> | undefined;
  let again = false;
  let timer: Timer | undefined;
  let unsubscribe: (() => void) | undefined;

  /** One step, its deliveries handed on; null when another instance holds the position. */
  async function step(): Promise<number | null> {
    const done = await consumeEvents(deps.sql, timing.batch, deps.claim);
    if (done && done.created.length > 0) await deps.deliver(done.created);
    return done?.read ?? null;
  }

  async function drain() {
    try {
      for (;;) {
        again = false;
        const read = await step();
        if (read === null || (read < timing.batch && !again)) break;
      }
    } catch (e) {
      deps.logger.warn({ err: (e as Error).message }, "webhook deliveries from the event log not made; retrying");
    }
  }

  function run() {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    deps.clock.clear(timer);
    running = drain().finally(() => {
      running = undefined;
      if (!stopped) timer = deps.clock.setTimeout(run, timing.pollMs);
    });
  }

  return {
    /** Creates the position at the log's high-water mark if it is missing, then follows the log. */
    async start() {
      if (!stopped) return;
      stopped = false;
      const at = await highWaterPosition(deps.sql);
      await deps.sql`
        insert into event_consumers (name, after_txid, after_id) values (${WEBHOOK_CONSUMER}, ${at.txid}::xid8, ${at.id})
        on conflict (name) do nothing`;
      unsubscribe = deps.events.onEvents(() => run());
      run();
    },
    async stop() {
      stopped = true;
      deps.clock.clear(timer);
      unsubscribe?.();
      await running;
    },
    /** Turns every readable event into deliveries now (tests that drive the work by hand). */
    async drain() {
      while (((await step()) ?? 0) > 0);
    },
  };
}
