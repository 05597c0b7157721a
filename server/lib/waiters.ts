import type { Caller } from "../auth/caller";
import { matches, type Revocation } from "../auth/caller-cache";
import { authorizeRoute, type RouteRule } from "../auth/plugin";
import { AppError } from "../errors";
import { type Clock, createScheduler, type Scheduler } from "./clock";

/**
 * The mechanics every long-poll of the server shares (docs/architecture.md "Catching up and
 * waiting"): calls waiting on this instance, filed under a key (an organization, a number); one
 * listener on a feed of events hands each event to the waiters filed under its key, and each
 * waiter's `offer` (the feature's match function) says whether it wakes. Limits per
 * organization and per instance, every deadline on one scheduler, `revoked` ending the waits of
 * a revoked credential, and `close` ending every wait as a shutdown. Knows no SQL and no HTTP:
 * the feature's `body` does the reading.
 */

/** How a wait ended without an answer ("revoked": its caller's credential was revoked meanwhile, see `revoked`). */
export type WaitEnd = "timeout" | "aborted" | "shutdown" | "revoked";
/** Why a wait was refused before it started. */
export type Refusal = "organization_full" | "instance_full" | "closed";

export type WaiterLimits = { perOrganization: number; perInstance: number };
export const DEFAULT_WAITER_LIMITS: WaiterLimits = { perOrganization: 1000, perInstance: 20_000 };

export type WaitSpec<E> = {
  /** The keys the waiter is filed under; an event reaches the waiters filed under its key. */
  keys: readonly number[];
  /** The organization the wait is counted against (`perOrganization`). */
  quotaOrganization: number;
  /** Whose call it is: a revocation of its credential ends the wait (`revoked`). */
  caller: Caller;
  timeoutMs: number;
  signal?: AbortSignal;
  /** The feature's match: takes what it needs of an event of its keys; true wakes the waiter. */
  offer(event: E): boolean;
};

/** Resolves when the waiter was offered something since the last call (null) or has ended. */
export type NextSignal = () => Promise<WaitEnd | null>;

type Waiter<E> = {
  /** Its deadline's key in the scheduler (a number: nothing to build and hash). */
  key: number;
  spec: WaitSpec<E>;
  keys: readonly number[];
  ready: boolean;
  ended: WaitEnd | null;
  /** Resolves the pending `next`, with what it reports. */
  poke: ((outcome: WaitEnd | null) => void) | null;
};

type Deps<E> = {
  /** The feed of events (the instance's event tail); returns the unsubscribe function. */
  onEvents(listener: (events: E[]) => void): () => void;
  /** The key an event is filed under, or null when no waiter of this registry cares. */
  keyOf(event: E): number | null;
  clock: Clock;
  limits?: Partial<WaiterLimits>;
  /** Every waiter's timeout on one timer; tests pass one driven by a fake clock. */
  deadlines?: Scheduler;
};

export function createWaiterRegistry<E>(deps: Deps<E>) {
  const limits: WaiterLimits = { ...DEFAULT_WAITER_LIMITS, ...deps.limits };
  const byKey = new Map<number, Set<Waiter<E>>>();
  const perOrganization = new Map<number, number>();
  const deadlines = deps.deadlines ?? createScheduler(deps.clock);
  let size = 0;
  let serial = 0;
  let closed = false;

  // Settles a pending `next` at once with its outcome, rather than through a second round of `next`.
  const wake = (w: Waiter<E>) => {
    const poke = w.poke;
    if (!poke) return;
    w.poke = null;
    if (w.ended) poke(w.ended);
    else {
      w.ready = false;
      poke(null);
    }
  };
  const end = (w: Waiter<E>, why: WaitEnd) => {
    w.ended ??= why;
    wake(w);
  };

  // One listener for all waiters: an event costs a map lookup plus one match per waiter of its key.
  const unsubscribe = deps.onEvents((events) => {
    if (size === 0) return;
    for (const e of events) {
      const k = deps.keyOf(e);
      const waiters = k === null ? undefined : byKey.get(k);
      if (!waiters) continue;
      for (const w of waiters) {
        if (w.ended || !w.spec.offer(e)) continue;
        w.ready = true;
        wake(w);
      }
    }
  });

  function refusal(s: WaitSpec<E>): Refusal | null {
    if (closed) return "closed";
    if (size >= limits.perInstance) return "instance_full";
    if ((perOrganization.get(s.quotaOrganization) ?? 0) >= limits.perOrganization) return "organization_full";
    return null;
  }

  function add(s: WaitSpec<E>): Waiter<E> {
    const keys = s.keys.length === 1 ? s.keys : [...new Set(s.keys)];
    const w: Waiter<E> = { key: ++serial, spec: s, keys, ready: false, ended: null, poke: null };
    for (const k of w.keys) {
      let set = byKey.get(k);
      if (!set) byKey.set(k, (set = new Set()));
      set.add(w);
    }
    size++;
    perOrganization.set(s.quotaOrganization, (perOrganization.get(s.quotaOrganization) ?? 0) + 1);
    deadlines.schedule(w.key, deps.clock.now() + s.timeoutMs, () => end(w, "timeout"));
    return w;
  }

  function remove(w: Waiter<E>) {
    for (const k of w.keys) {
      const set = byKey.get(k);
      set?.delete(w);
      if (set?.size === 0) byKey.delete(k);
    }
    size--;
    const left = (perOrganization.get(w.spec.quotaOrganization) ?? 1) - 1;
    if (left > 0) perOrganization.set(w.spec.quotaOrganization, left);
    else perOrganization.delete(w.spec.quotaOrganization);
    deadlines.cancel(w.key);
  }

  const next = (w: Waiter<E>): Promise<WaitEnd | null> => {
    if (w.ended) return Promise.resolve(w.ended);
    if (w.ready) {
      w.ready = false;
      return Promise.resolve(null);
    }
    return new Promise<WaitEnd | null>((resolve) => (w.poke = resolve));
  };

  /**
   * Registers the waiter, then runs `body` (the feature's reads and its waiting through `next`),
   * and unregisters it however `body` ends. Registering first is what lets nothing fall between
   * a read and the wait: an event handed on while the read runs is offered, and `next` reports it.
   */
  async function wait<T>(s: WaitSpec<E>, body: (next: NextSignal) => Promise<T>): Promise<T | { refused: Refusal } | { ended: "aborted" | "revoked" }> {
    const refused = refusal(s);
    if (refused) return { refused };
    if (s.signal?.aborted) return { ended: "aborted" };
    const w = add(s);
    const onAbort = () => end(w, "aborted");
    s.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const outcome = await body(() => next(w));
      // Found while the revocation arrived: nothing goes out on a revoked credential.
      return w.ended === "revoked" ? { ended: "revoked" } : outcome;
    } finally {
      s.signal?.removeEventListener("abort", onAbort);
      remove(w);
    }
  }

  return {
    wait,
    /** Shortened by tests. */
    limits,
    /** Waiting calls on this instance, or filed under one key. */
    size: (key?: number) => (key === undefined ? size : (byKey.get(key)?.size ?? 0)),
    /**
     * Ends the waits whose caller the revocation takes away (the credential module's `onRevoked`,
     * on every instance, before the revoking request answers): no wait hands over what arrives
     * after its credential was revoked. The route then resolves the request's credential again
     * (`answerRevokedWait`).
     */
    revoked(r: Revocation) {
      for (const set of byKey.values()) for (const w of set) if (matches(r, w.spec.caller)) end(w, "revoked");
    },
    /** Ends every wait (answered as a shutdown) and refuses new ones: the server is stopping. */
    close() {
      if (closed) return;
      closed = true;
      const all = new Set([...byKey.values()].flatMap((set) => [...set]));
      for (const w of all) end(w, "shutdown");
      unsubscribe();
      deadlines.stop();
    },
  };
}

/** The 503 of a wait the server ended (or refused) because it is stopping: another instance answers. */
export const shuttingDown = () =>
  new AppError(503, "unavailable", "The server is shutting down; call again (another instance answers).", { headers: { "retry-after": "1" } });

/** The error a refused wait answers: 429 when a limit is reached, 503 when the server is stopping. */
export function refusedError(refusal: Refusal, limits: WaiterLimits): AppError {
  if (refusal === "closed") return shuttingDown();
  const scope = refusal === "organization_full" ? `for this organization (${limits.perOrganization} on this server)` : "on this server";
  return new AppError(429, "rate_limited", `Too many calls are waiting ${scope}; try again when some have been answered.`, {
    headers: { "retry-after": "1" },
  });
}

export type WaiterRegistry<E> = ReturnType<typeof createWaiterRegistry<E>>;

/**
 * A wait its caller's revocation ended (`revoked`): 401 when the request's credential is gone
 * (resolved again, past the cache the revocation emptied), 403 when the route's rule no longer
 * lets it through (an API key that lost the permission: the route's own answer to its next call,
 * not "nothing came"); a credential that still stands (a user who left one of their
 * organizations) is answered with the caller it stands for now, for the route to judge what it
 * may still read (the wait's empty answer, or 404 for what it no longer sees).
 */
export async function answerRevokedWait(auth: { resolve(request: Request): Caller | Promise<Caller> }, request: Request, rule: RouteRule): Promise<Caller> {
  return authorizeRoute(await auth.resolve(request), request, rule);
}
