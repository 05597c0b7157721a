import { event } from "../events/catalog";
import type { StoredEvent } from "../events/log";
import { type Clock, createScheduler, type Scheduler } from "../lib/clock";

/**
 * The waiters of `GET /api/numbers/{id}/messages/next` on this instance (docs/architecture.md
 * "Waiting for a message"). One listener on the instance's event tail for all of them: a
 * `message.received` event of a number wakes the waiters of that number whose organizations may
 * see it (the event's organization), with the announced message ids; each then looks those ids up
 * once. No waiter polls the database. The
 * registry knows no SQL and no HTTP: the caller hands it the lookup (`find`).
 */

/** What a lookup is asked to check: the announced ids only, or everything since `after` (the first check). */
export type Among = number[] | undefined;

/** How a wait ended without a message. */
export type WaitEnd = "timeout" | "aborted" | "shutdown";

/** Why a wait was refused before it started. */
export type Refusal = "organization_full" | "instance_full" | "closed";

export type WaiterLimits = { perOrganization: number; perInstance: number };
export const DEFAULT_WAITER_LIMITS: WaiterLimits = { perOrganization: 1000, perInstance: 20_000 };

export type WaitRequest = {
  hostedSimId: number;
  /** Organizations whose view of the number counts; events limited to other organizations do not wake it. */
  viewers: number[];
  /** The organization the wait is counted against (`perOrganization`). */
  quotaOrganization: number;
  timeoutMs: number;
  signal?: AbortSignal;
};

export type WaitOutcome<T> = { found: T } | { ended: WaitEnd } | { refused: Refusal };

type Waiter = {
  key: string;
  request: WaitRequest;
  /** Ids announced since the last lookup. */
  pending: Set<number>;
  ended: WaitEnd | null;
  poke: (() => void) | null;
};

/** The message a `message.received` row announces, and for which organization. */
function announced(e: StoredEvent): { hostedSimId: number; messageId: number; organization: number } | null {
  if (e.type !== event.messageReceived.type || e.hostedSimId === null) return null;
  const message = (e.payload as { message?: { id?: unknown } }).message;
  if (typeof message?.id !== "number") return null;
  return { hostedSimId: e.hostedSimId, messageId: message.id, organization: e.organizationId };
}

type Deps = {
  /** The instance's event tail (`services.events.onEvents`). */
  onEvents(listener: (events: StoredEvent[]) => void): () => void;
  clock: Clock;
  limits?: Partial<WaiterLimits>;
  /** Every waiter's timeout on one timer; tests pass one driven by a fake clock. */
  deadlines?: Scheduler;
};

export function createMessageWaiters(deps: Deps) {
  const limits: WaiterLimits = { ...DEFAULT_WAITER_LIMITS, ...deps.limits };
  const bySim = new Map<number, Set<Waiter>>();
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

  // The tail hands on every event of the log once, whichever instance appended it: none is lost
  // while Redis is away (the tail polls), so no waiter needs to look at everything again.
  const unsubscribe = deps.onEvents((events) => {
    for (const e of events) {
      const a = announced(e);
      const waiters = a && bySim.get(a.hostedSimId);
      if (!a || !waiters) continue;
      for (const w of waiters) {
        if (!w.request.viewers.includes(a.organization)) continue;
        w.pending.add(a.messageId);
        wake(w);
      }
    }
  });

  function refusal(r: WaitRequest): Refusal | null {
    if (closed) return "closed";
    if (size >= limits.perInstance) return "instance_full";
    if ((perOrganization.get(r.quotaOrganization) ?? 0) >= limits.perOrganization) return "organization_full";
    return null;
  }

  function add(r: WaitRequest): Waiter {
    const w: Waiter = { key: `w${++serial}`, request: r, pending: new Set(), ended: null, poke: null };
    let set = bySim.get(r.hostedSimId);
    if (!set) bySim.set(r.hostedSimId, (set = new Set()));
    set.add(w);
    size++;
    perOrganization.set(r.quotaOrganization, (perOrganization.get(r.quotaOrganization) ?? 0) + 1);
    deadlines.schedule(w.key, deps.clock.now() + r.timeoutMs, () => end(w, "timeout"));
    return w;
  }

  function remove(w: Waiter) {
    const set = bySim.get(w.request.hostedSimId);
    if (!set?.delete(w)) return;
    if (set.size === 0) bySim.delete(w.request.hostedSimId);
    size--;
    const left = (perOrganization.get(w.request.quotaOrganization) ?? 1) - 1;
    if (left > 0) perOrganization.set(w.request.quotaOrganization, left);
    else perOrganization.delete(w.request.quotaOrganization);
    deadlines.cancel(w.key);
  }

  /** Resolves when the waiter has something to look at or has ended. */
  const signalled = (w: Waiter) => (w.ended || w.pending.size > 0 ? Promise.resolve() : new Promise<void>((resolve) => (w.poke = resolve)));

  /**
   * Waits for the first value `find` returns. The waiter is registered before the first lookup,
   * so a message stored while that lookup runs is announced to it and looked up next: none falls
   * between the check and the registration. `find(undefined)` checks everything the request
   * covers; `find(ids)` only the ids announced since.
   */
  async function wait<T>(r: WaitRequest, find: (among: Among) => Promise<T | null>): Promise<WaitOutcome<T>> {
    const refused = refusal(r);
    if (refused) return { refused };
    if (r.signal?.aborted) return { ended: "aborted" };
    const w = add(r);
    const onAbort = () => end(w, "aborted");
    r.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      let among: Among;
      for (;;) {
        const found = await find(among);
        if (found !== null) return { found };
        await signalled(w);
        if (w.ended) return { ended: w.ended };
        among = [...w.pending];
        w.pending.clear();
      }
    } finally {
      r.signal?.removeEventListener("abort", onAbort);
      remove(w);
    }
  }

  return {
    wait,
    /** Shortened by tests, like the realtime limits. */
    limits,
    /** Waiting calls on this instance, or on one number. */
    size: (hostedSimId?: number) => (hostedSimId === undefined ? size : (bySim.get(hostedSimId)?.size ?? 0)),
    /** Ends every wait (answered as a shutdown) and refuses new ones: the server is stopping. */
    close() {
      closed = true;
      for (const waiters of bySim.values()) for (const w of waiters) end(w, "shutdown");
      unsubscribe();
      deadlines.stop();
    },
  };
}

export type MessageWaiters = ReturnType<typeof createMessageWaiters>;
