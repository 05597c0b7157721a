import type { Pool } from "../db/client";
import type { Logger } from "../lib/logger";
import { singleFlight } from "../lib/single-flight";
import type { Bus } from "./bus";
import { isAfter, type Position } from "./cursor";
import { highWaterPosition, readEvents, type StoredEvent } from "./log";

/** The bus channel on which an instance tells the others that it appended events (no payload). */
export const EVENTS_APPENDED = "internal:events.appended";

export const TAIL_TIMING = {
  /** Read at once on a wake, then every `hotMs` while wakes keep coming (a transaction older than the new events may still be running). */
  hotMs: 25,
  /** How long after the last wake the tail stays hot. */
  hotForMs: 500,
  /** Without wakes (a writer without the bus: the CLI, a lost Redis message), read this often. */
  idleMs: 1000,
  batch: 1000,
};

export type EventTail = {
  /** Starts at the log's head: this instance hands on what is appended from now on. */
  start(): Promise<void>;
  /** Stops reading; resolves once a read under way has ended (so the pool can close after it). */
  stop(): Promise<void>;
  /** Call after committing a transaction that appended events: every instance reads at once. */
  notify(): void;
  /** Receives each new event once, in log order, in batches. */
  onEvents(listener: (events: StoredEvent[]) => void): () => void;
  /** The position up to which this instance has handed events on. */
  position(): Position;
  /**
   * Whether every event after `p` is still to be handed on by this running tail: it has handed
   * on nothing after `p` yet, so a listener registered now receives each of them.
   */
  handsOnAllAfter(p: Position): boolean;
};

/**
 * Each instance follows the whole log and hands new events to its listeners (the realtime hub
 * of this instance's sockets, waiting `GET /api/events` calls). Writers wake every instance
 * through the bus; a slow poll covers wakes that never come.
 */
export function createEventTail(deps: {
  sql: Pool;
  bus: Bus;
  logger: Logger;
  /**
   * Awaited before a batch is handed on (the credential module's revocationsCaughtUp): a
   * credential revoked before the events were appended has ended its waits and sockets by then,
   * so nothing appended after a revocation reaches a call made with the revoked credential.
   */
  beforeHandOn?: () => Promise<void>;
  timing?: Partial<typeof TAIL_TIMING>;
}): EventTail {
  const timing = { ...TAIL_TIMING, ...deps.timing };
  const listeners = new Set<(events: StoredEvent[]) => void>();
  let at: Position | undefined;
  let hotUntil = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = true;
  let unsubscribe: (() => void) | undefined;

  function arm() {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void read(), performance.now() < hotUntil ? timing.hotMs : timing.idleMs);
  }

  /** One read at a time; a wake during a read asks for another after it. */
  const reads = singleFlight(
    async () => {
      if (stopped || !at) return false;
      const events = await readEvents(deps.sql, at, {}, timing.batch);
      if (events.length > 0) {
        await deps.beforeHandOn?.();
        at = events[events.length - 1]!.position;
        for (const l of listeners) {
          try {
            l(events);
          } catch (e) {
            deps.logger.error({ err: (e as Error).message }, "event listener failed");
          }
        }
      }
      return events.length === timing.batch;
    },
    { idle: arm },
  );

  function read(): Promise<void> {
    if (stopped || !at) return Promise.resolve();
    return reads.run().catch((e) => {
      if (!stopped) deps.logger.warn({ err: (e as Error).message }, "event log read failed");
    });
  }

  function wake() {
    hotUntil = performance.now() + timing.hotForMs;
    void read();
  }

  return {
    async start() {
      stopped = false;
      at = await highWaterPosition(deps.sql);
      unsubscribe = deps.bus.subscribe((m) => {
        if (m.channel === EVENTS_APPENDED) wake();
      });
      arm();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      unsubscribe?.();
      listeners.clear();
      await reads.current?.catch(() => {});
    },
    notify() {
      deps.bus.publish(EVENTS_APPENDED, "appended", null);
    },
    onEvents(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    position: () => at ?? { txid: "0", id: 0 },
    handsOnAllAfter: (p) => !stopped && at !== undefined && !isAfter(at, p),
  };
}
