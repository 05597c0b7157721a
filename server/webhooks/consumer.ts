import type { Pool } from "../db/client";
import type { Position } from "../events/cursor";
import { highWaterPosition, readEvents, type StoredEvent } from "../events/log";
import type { EventTail } from "../events/tail";
import type { Clock, Timer } from "../lib/clock";
import type { Logger } from "../lib/logger";
import { singleFlight } from "../lib/single-flight";
import type { LiveItem } from "./dispatcher";
import { matchLiveDeliveries } from "./forwarding";
import { claimConsumer, releaseConsumer, renewConsumer } from "./live-store";

/** The row in `event_consumers` holding how far webhook deliveries have been made from the log. */
export const WEBHOOK_CONSUMER = "webhooks";

export const CONSUMER_TIMING = {
  /** Events read (and matched to integrations) per step. */
  batch: 1000,
  /** Runs this often without a wake: after a failed run, or while another instance owns the consumer. */
  pollMs: 1000,
  /** The owner's lease (database time); a dead owner's events are taken up by another instance after it. */
  leaseSeconds: 10,
  /** The owner renews its lease and writes its position this often (real time). */
  renewMs: 1000,
  /** No more events are read while this many of their deliveries are neither attempted nor handed over. */
  maxOutstanding: 50_000,
};

const LEASE_LAPSED = "webhook consumer lease lapsed; its waiting deliveries left to the next owner";

const sameAs = (a: Position, b: Position) => a.id === b.id && a.txid === b.txid;

/**
 * The events of a batch the tail read that come after `at`, when the batch reaches back to `at`
 * (it starts there, or `at` is one of its events): then nothing between `at` and them is missing.
 * Undefined otherwise (the consumer reads for itself).
 */
function after(batch: { from: Position; events: StoredEvent[] }, at: Position): StoredEvent[] | undefined {
  if (sameAs(batch.from, at)) return batch.events;
  const i = batch.events.findIndex((e) => sameAs(e.position, at));
  return i < 0 ? undefined : batch.events.slice(i + 1);
}

/** An event read whose deliveries are not all recorded yet: `left` of them. */
type Entry = { position: Position; left: number };

/**
 * Follows the whole log once across instances and hands each event's live deliveries to
 * `deliver` (the dispatcher's first attempts) before anything of them is stored. One instance
 * owns the consumer at a time, under a lease in `event_consumers` renewed every second; the
 * others poll to take it when it is released (stop) or lapses (death).
 *
 * The owner reads ahead of its durable position. The position it writes (with each renewal, and
 * when it stops) is the end of the longest run of read events whose deliveries are all recorded
 * (attempted, or handed to the job path): a crash, or a lease lost to a stall, makes the next
 * owner read from there again, so every committed event is delivered at least once, and a
 * repeat carries the same `webhook-id` (the event's id). A slow endpoint holds the position back
 * (its attempts, at most its timeout, and its lane, at most the dispatcher's wait), never the
 * reading: lanes are per endpoint.
 */
export function createLogConsumer(deps: {
  sql: Pool;
  events: EventTail;
  clock: Clock;
  logger: Logger;
  owner: string;
  disableAfterSeconds: number;
  deliver: (items: LiveItem[]) => void;
  /** This process no longer owns the consumer: forget the deliveries waiting (not attempted). */
  abandon: () => void;
  timing?: Partial<typeof CONSUMER_TIMING>;
}) {
  const timing = { ...CONSUMER_TIMING, ...deps.timing };
  let stopped = true;
  let timer: Timer | undefined;
  let renewTimer: ReturnType<typeof setTimeout> | undefined;
  let renewing: Promise<void> | undefined;
  let unsubscribe: (() => void) | undefined;

  // Ownership: the position read up to, the events read but not all recorded (in log order), the
  // end of the recorded run, and until when (performance.now()) the lease surely holds.
  let owned = false;
  let readAt: Position | undefined;
  let entries: Entry[] = [];
  let head = 0;
  let settled: Position | undefined;
  let written: Position | undefined;
  let leaseUntil = 0;
  let outstanding = 0;
  let generation = 0;

  function reset() {
    owned = false;
    readAt = settled = written = undefined;
    entries = [];
    head = 0;
    outstanding = 0;
    generation++;
  }

  function advance() {
    while (head < entries.length && entries[head]!.left === 0) settled = entries[head++]!.position;
    if (head > 4096 && head * 2 > entries.length) {
      entries = entries.slice(head);
      head = 0;
    }
  }

  /**
   * Whether what generation `gen` read is still this process's to deliver: the lease surely held
   * (a stall past it, a paused or starved process, may have let another instance take the
   * consumer and deliver those events). A lapse found is a loss: everything read is forgotten and
   * read again from the durable position once the consumer is claimed again.
   */
  function holds(gen: number) {
    if (gen !== generation) return false;
    if (performance.now() < leaseUntil) return true;
    lose(LEASE_LAPSED);
    return false;
  }

  function lose(why: string) {
    deps.logger.warn({}, why);
    reset();
    deps.abandon();
  }

  function settleOne(entry: Entry, gen: number) {
    if (gen !== generation) return;
    outstanding--;
    entry.left--;
    if (entry.left === 0 && entries[head] === entry) advance();
    if (outstanding === timing.maxOutstanding / 2) run();
  }

  async function claim(): Promise<boolean> {
    const started = performance.now();
    const at = await claimConsumer(deps.sql, WEBHOOK_CONSUMER, deps.owner, timing.leaseSeconds);
    if (!at) return false;
    leaseUntil = started + (timing.leaseSeconds - 1) * 1000;
    if (!owned) {
      reset();
      owned = true;
      readAt = settled = written = at;
    }
    return true;
  }

  /**
   * One step: reads and hands on a batch; the number of events read, or null when this process
   * does not own the consumer. `given`: the batch this instance's event tail just read, taken
   * instead of reading it again when it starts right where the consumer stands.
   */
  async function step(given?: { from: Position; events: StoredEvent[] }): Promise<number | null> {
    if (owned && performance.now() >= leaseUntil) lose(LEASE_LAPSED);
    if (!owned && !(await claim())) return null;
    if (outstanding >= timing.maxOutstanding) return 0;
    const gen = generation;
    const events = (given && after(given, readAt!)) ?? (await readEvents(deps.sql, readAt!, {}, timing.batch));
    if (events.length === 0) return 0;
    const matched = await matchLiveDeliveries(deps.sql, events, deps.disableAfterSeconds);
    if (gen !== generation) return 0; // ownership lost meanwhile
    const items: LiveItem[] = [];
    for (const e of events) {
      const deliveries = matched.get(e.position.id) ?? [];
      const entry: Entry = { position: e.position, left: deliveries.length };
      entries.push(entry);
      for (const delivery of deliveries) items.push({ delivery, settle: () => settleOne(entry, gen), owned: () => holds(gen) });
    }
    readAt = events[events.length - 1]!.position;
    outstanding += items.length;
    advance();
    deps.deliver(items);
    return events.length;
  }

  /** One step at a time, batch after batch while they come full; a wake during a step asks for another after it. */
  const drains = singleFlight<{ from: Position; events: StoredEvent[] }>(
    async (given) => {
      const read = await step(given);
      return read !== null && read >= timing.batch;
    },
    {
      idle: () => {
        if (!stopped) timer = deps.clock.setTimeout(run, timing.pollMs);
      },
    },
  );

  function run(given?: { from: Position; events: StoredEvent[] }) {
    if (stopped) return;
    deps.clock.clear(timer);
    drains.run(given).catch((e) => deps.logger.warn({ err: (e as Error).message }, "webhook deliveries from the event log not made; retrying"));
  }

  /** Renews the lease and writes the position; on real time, since the lease is the database's. */
  async function renew() {
    if (owned) {
      const started = performance.now();
      const at = settled;
      try {
        if (await renewConsumer(deps.sql, WEBHOOK_CONSUMER, deps.owner, timing.leaseSeconds, at === written ? null : (at ?? null))) {
          leaseUntil = started + (timing.leaseSeconds - 1) * 1000;
          written = at;
        } else lose("webhook consumer taken over by another instance; its waiting deliveries left to it");
      } catch (e) {
        deps.logger.warn({ err: (e as Error).message }, "webhook consumer lease not renewed");
      }
    }
    if (!stopped) renewTimer = setTimeout(() => (renewing = renew()), timing.renewMs);
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
      // Each batch the tail hands on starts where its previous one ended (the tail's position
      // when we subscribe before the first).
      let tailAt = deps.events.position();
      unsubscribe = deps.events.onEvents((events) => {
        const from = tailAt;
        tailAt = events[events.length - 1]?.position ?? tailAt;
        run({ from, events });
      });
      renewTimer = setTimeout(() => (renewing = renew()), timing.renewMs);
      run();
    },
    /** Stops reading; `release` (after the dispatcher has recorded what it holds) writes the position and lets the consumer go. */
    async stop() {
      stopped = true;
      deps.clock.clear(timer);
      clearTimeout(renewTimer);
      unsubscribe?.();
      await drains.current?.catch(() => {});
      await renewing;
    },
    async release() {
      if (!owned) return;
      await releaseConsumer(deps.sql, WEBHOOK_CONSUMER, deps.owner, settled ?? null).catch((e) =>
        deps.logger.warn({ err: (e as Error).message }, "webhook consumer not released; its lease lapses"),
      );
      reset();
    },
    /** How far this process has read the log and recorded every delivery of what it read (undefined: not the owner). */
    progress: () => (owned ? { read: readAt!, settled: settled! } : undefined),
  };
}
