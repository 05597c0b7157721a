import type { Caller } from "../auth/caller";
import { event } from "../events/catalog";
import type { StoredEvent } from "../events/log";
import type { Clock, Scheduler } from "../lib/clock";
import { createWaiterRegistry, type Refusal, type WaitEnd, type WaiterLimits } from "../lib/waiters";

/**
 * The waiters of `GET /api/numbers/{id}/messages/next` on this instance (docs/architecture.md
 * "Waiting for a message"), on the shared waiter registry (server/lib/waiters.ts), filed by
 * number: a `message.received` event of a number wakes the waiters of that number whose
 * organizations may see it (the event's organization), with the announced message ids; each then
 * looks those ids up once. No waiter polls the database. The caller hands it the lookup (`find`).
 */

/** What a lookup is asked to check: the announced ids only, or everything since `after` (the first check). */
export type Among = number[] | undefined;

export type WaitRequest = {
  hostedSimId: number;
  /** Organizations whose view of the number counts; events limited to other organizations do not wake it. */
  viewers: number[];
  /** The organization the wait is counted against (`perOrganization`). */
  quotaOrganization: number;
  /** Whose call it is: the wait ends when its credential is revoked. */
  caller: Caller;
  timeoutMs: number;
  signal?: AbortSignal;
};

export type WaitOutcome<T> = { found: T } | { ended: WaitEnd } | { refused: Refusal };

/** The number of the message a `message.received` row announces. */
const announcingSim = (e: StoredEvent) => (e.type === event.messageReceived.type ? e.hostedSimId : null);
const announcedId = (e: StoredEvent) => {
  const id = (e.payload as { message?: { id?: unknown } }).message?.id;
  return typeof id === "number" ? id : null;
};

type Deps = {
  /** The instance's event tail (`services.events.onEvents`). */
  onEvents(listener: (events: StoredEvent[]) => void): () => void;
  clock: Clock;
  limits?: Partial<WaiterLimits>;
  deadlines?: Scheduler;
};

export function createMessageWaiters(deps: Deps) {
  const registry = createWaiterRegistry<StoredEvent>({ ...deps, keyOf: announcingSim });

  /**
   * Waits for the first value `find` returns. The waiter is registered before the first lookup,
   * so a message stored while that lookup runs is announced to it and looked up next: none falls
   * between the check and the registration. `find(undefined)` checks everything the request
   * covers; `find(ids)` only the ids announced since.
   */
  function wait<T>(r: WaitRequest, find: (among: Among) => Promise<T | null>): Promise<WaitOutcome<T>> {
    const pending = new Set<number>();
    const offer = (e: StoredEvent) => {
      const id = r.viewers.includes(e.organizationId) ? announcedId(e) : null;
      if (id === null) return false;
      pending.add(id);
      return true;
    };
    const spec = { keys: [r.hostedSimId], quotaOrganization: r.quotaOrganization, caller: r.caller, timeoutMs: r.timeoutMs, signal: r.signal, offer };
    return registry.wait(spec, async (next): Promise<WaitOutcome<T>> => {
      let among: Among;
      for (;;) {
        const found = await find(among);
        if (found !== null) return { found };
        const ended = await next();
        if (ended) return { ended };
        among = [...pending];
        pending.clear();
      }
    });
  }

  return { ...registry, wait };
}

export type MessageWaiters = ReturnType<typeof createMessageWaiters>;
