import { type Clock, createScheduler, type Scheduler } from "../lib/clock";
import type { EventType } from "./catalog";
import type { Position } from "./cursor";
import type { StoredEvent } from "./log";
import type { EventTail } from "./tail";

/**
 * The waiting calls of `GET /api/events?wait=` on this instance (docs/architecture.md "Catching
 * up and waiting"). The instance's event tail hands every new event of the log to one listener,
 * which compares it in memory with each waiter of the event's organization (type, number,
 * device, position), hands it the events it matches and wakes it. A woken waiter answers with
 * those events without reading the database again: its first read found nothing after its
 * position, and the tail hands on, in log order and without gaps, everything that became
 * readable since (see `wait`). No waiter polls the database, and an event appended on another
 * instance wakes waiters here too, since every instance's tail reads the whole log. Knows no
 * SQL and no HTTP: the caller hands it the first read.
 */

/** What a waiter waits for: the fields of the event rows its read filters on. */
export type EventMatch = {
  organizations: number[];
  /** null: every type. */
  types: EventType[] | null;
  hostedSimId?: number;
  deviceId?: number;
  /** Only events after this position count. */
  after: Position;
};

export type WaitEnd = "timeout" | "aborted" | "shutdown";
export type Refusal = "organization_full" | "instance_full" | "closed";
export type WaitOutcome<T> = { found: T } | { woken: StoredEvent[] } | { ended: WaitEnd } | { refused: Refusal };

export type EventWaiterLimits = { perOrganization: number; perInstance: number };
export const DEFAULT_EVENT_WAITER_LIMITS: EventWaiterLimits = { perOrganization: 1000, perInstance: 20_000 };

export type EventWaitRequest = {
  match: EventMatch;
  /** The organization the wait is counted against (`perOrganization`). */
  quotaOrganization: number;
  /** The most events a wake-up collects (the page size plus one, so the caller can say more follow). */
  limit: number;
  timeoutMs: number;
  signal?: AbortSignal;
};

type Waiter = {
  key: string;
  request: EventWaitRequest;
  afterTxid: bigint;
  types: Set<string> | null;
  /** Matching events the tail handed on since the waiter registered, in log order. */
  events: StoredEvent[];
  ended: WaitEnd | null;
  poke: (() => void) | null;
};

function matches(w: Waiter, e: StoredEvent, txid: bigint): boolean {
  const m = w.request.match;
  if (w.types && !w.types.has(e.type)) return false;
  if (m.hostedSimId !== undefined && e.hostedSimId !== m.hostedSimId) return false;
  if (m.deviceId !== undefined && e.deviceId !== m.deviceId) return false;
  return txid > w.afterTxid || (txid === w.afterTxid && e.position.id > m.after.id);
}

type Deps = {
  events: Pick<EventTail, "onEvents">;
  clock: Clock;
  limits?: Partial<EventWaiterLimits>;
  /** Every waiter's timeout on one timer; tests pass one driven by a fake clock. */
  deadlines?: Scheduler;
};

export function createEventWaiters(deps: Deps) {
  const limits: EventWaiterLimits = { ...DEFAULT_EVENT_WAITER_LIMITS, ...deps.limits };
  const byOrganization = new Map<number, Set<Waiter>>();
  const perOrganization = new Map<number, number>();
  const deadlines = deps.deadlines ?? createScheduler(deps.clock);
  let size = 0;
  let serial = 0;
  let closed = false;

  const wake = (w: Waiter) => {
    const poke = w.poke;
    w.poke = null;
    poke?.();
  };
  const end = (w: Waiter, why: WaitEnd) => {
    w.ended ??= why;
    wake(w);
  };

  const unlisten = deps.events.onEvents((batch) => {
    if (size === 0) return;
    for (const e of batch) {
      const waiters = byOrganization.get(e.organizationId);
      if (!waiters) continue;
      const txid = BigInt(e.position.txid);
      for (const w of waiters) {
        if (w.events.length >= w.request.limit || !matches(w, e, txid)) continue;
        w.events.push(e);
        wake(w);
      }
    }
  });

  function refusal(r: EventWaitRequest): Refusal | null {
    if (closed) return "closed";
    if (size >= limits.perInstance) return "instance_full";
    if ((perOrganization.get(r.quotaOrganization) ?? 0) >= limits.perOrganization) return "organization_full";
    return null;
  }

  function add(r: EventWaitRequest): Waiter {
    const types = r.match.types && new Set<string>(r.match.types);
    const w: Waiter = { key: `e${++serial}`, request: r, afterTxid: BigInt(r.match.after.txid), types, events: [], ended: null, poke: null };
    for (const o of new Set(r.match.organizations)) {
      let set = byOrganization.get(o);
      if (!set) byOrganization.set(o, (set = new Set()));
      set.add(w);
    }
    size++;
    perOrganization.set(r.quotaOrganization, (perOrganization.get(r.quotaOrganization) ?? 0) + 1);
    deadlines.schedule(w.key, deps.clock.now() + r.timeoutMs, () => end(w, "timeout"));
    return w;
  }

  function remove(w: Waiter) {
    for (const o of new Set(w.request.match.organizations)) {
      const set = byOrganization.get(o);
      set?.delete(w);
      if (set?.size === 0) byOrganization.delete(o);
    }
    size--;
    const left = (perOrganization.get(w.request.quotaOrganization) ?? 1) - 1;
    if (left > 0) perOrganization.set(w.request.quotaOrganization, left);
    else perOrganization.delete(w.request.quotaOrganization);
    deadlines.cancel(w.key);
  }

  const signalled = (w: Waiter) => (w.ended || w.events.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (w.poke = resolve)));

  /**
   * Answers what `read` finds, else the first matching events the tail hands on. Why nothing
   * falls between them: the waiter registers before the read. An event the tail handed on
   * before that was readable before it (the tail only reads below the high-water mark, which
   * never goes back), so the read sees it. An event the tail hands on after it is collected;
   * if the read saw it too, the read's answer wins. And the tail hands on every event once,
   * in log order, so the collected events are all the matching ones after the read's, up to
   * the moment of the wake-up.
   */
  async function wait<T>(r: EventWaitRequest, read: () => Promise<T | null>): Promise<WaitOutcome<T>> {
    const refused = refusal(r);
    if (refused) return { refused };
    if (r.signal?.aborted) return { ended: "aborted" };
    const w = add(r);
    const onAbort = () => end(w, "aborted");
    r.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const found = await read();
      if (found !== null) return { found };
      await signalled(w);
      if (w.events.length > 0) return { woken: w.events };
      return { ended: w.ended ?? "timeout" };
    } finally {
      r.signal?.removeEventListener("abort", onAbort);
      remove(w);
    }
  }

  return {
    wait,
    /** Shortened by tests. */
    limits,
    /** Waiting calls on this instance. */
    size: () => size,
    /** Ends every wait (answered as a shutdown) and refuses new ones: the server is stopping. */
    close() {
      if (closed) return;
      closed = true;
      const all = new Set([...byOrganization.values()].flatMap((set) => [...set]));
      for (const w of all) end(w, "shutdown");
      unlisten();
      deadlines.stop();
    },
  };
}

export type EventWaiters = ReturnType<typeof createEventWaiters>;
