import type { Caller } from "../auth/caller";
import type { Clock, Scheduler } from "../lib/clock";
import { createWaiterRegistry, type Refusal, type WaitEnd, type WaiterLimits } from "../lib/waiters";
import type { EventType } from "./catalog";
import type { Position } from "./cursor";
import type { StoredEvent } from "./log";
import type { EventTail } from "./tail";

/**
 * The waiting calls of `GET /api/events?wait=` on this instance (docs/architecture.md "Catching
 * up and waiting"), on the shared waiter registry (server/lib/waiters.ts), filed by organization.
 * The instance's event tail hands every new event of the log to the registry, which offers it to
 * each waiter of the event's organization; the match here (type, number, device, position) keeps
 * it and wakes the waiter. A woken waiter answers with those events without reading the database
 * again: its first read found nothing after its position, and the tail hands on, in log order and
 * without gaps, everything that became readable since (see `wait`). An event appended on another
 * instance wakes waiters here too, since every instance's tail reads the whole log.
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

export type WaitOutcome<T> = { found: T } | { woken: StoredEvent[] } | { ended: WaitEnd } | { refused: Refusal };

export type EventWaitRequest = {
  match: EventMatch;
  /** The organization the wait is counted against (`perOrganization`). */
  quotaOrganization: number;
  /** Whose call it is: the wait ends when its credential is revoked. */
  caller: Caller;
  /** The most events a wake-up collects (the page size plus one, so the caller can say more follow). */
  limit: number;
  timeoutMs: number;
  signal?: AbortSignal;
};

/** The match of one waiter, with its type set and position prepared once. */
function matcher(m: EventMatch): (e: StoredEvent) => boolean {
  const types = m.types && new Set<string>(m.types);
  const afterTxid = BigInt(m.after.txid);
  return (e) => {
    if (types && !types.has(e.type)) return false;
    if (m.hostedSimId !== undefined && e.hostedSimId !== m.hostedSimId) return false;
    if (m.deviceId !== undefined && e.deviceId !== m.deviceId) return false;
    const txid = BigInt(e.position.txid);
    return txid > afterTxid || (txid === afterTxid && e.position.id > m.after.id);
  };
}

type Deps = {
  events: Pick<EventTail, "onEvents" | "handsOnAllAfter">;
  clock: Clock;
  limits?: Partial<WaiterLimits>;
  deadlines?: Scheduler;
};

export function createEventWaiters(deps: Deps) {
  const registry = createWaiterRegistry<StoredEvent>({ ...deps, onEvents: deps.events.onEvents, keyOf: (e) => e.organizationId });

  /**
   * Answers what `read` finds, else the first matching events the tail hands on. Why nothing
   * falls between them: the waiter registers before the read. An event the tail handed on
   * before that was readable before it (the tail only reads below the high-water mark, which
   * never goes back), so the read sees it. An event the tail hands on after it is collected;
   * if the read saw it too, the read's answer wins. And the tail hands on every event once,
   * in log order, so the collected events are all the matching ones after the read's, up to
   * the moment of the wake-up. When the tail has handed on nothing after the waiter's position
   * yet (a client calling again with the cursor of its last answer), the read is skipped: every
   * event it could find is still to be handed on, so to this waiter, registered just before.
   */
  function wait<T>(r: EventWaitRequest, read: () => Promise<T | null>): Promise<WaitOutcome<T>> {
    const matches = matcher(r.match);
    const events: StoredEvent[] = [];
    const offer = (e: StoredEvent) => events.length < r.limit && matches(e) && events.push(e) > 0;
    const spec = { keys: r.match.organizations, quotaOrganization: r.quotaOrganization, caller: r.caller, timeoutMs: r.timeoutMs, signal: r.signal, offer };
    return registry.wait(spec, async (next): Promise<WaitOutcome<T>> => {
      // Registered (synchronously, before this body runs), so the tail's position cannot pass an event by meanwhile.
      if (!deps.events.handsOnAllAfter(r.match.after)) {
        const found = await read();
        if (found !== null) return { found };
      }
      const ended = await next();
      return events.length > 0 ? { woken: events } : { ended: ended ?? "timeout" };
    });
  }

  return { ...registry, wait };
}

export type EventWaiters = ReturnType<typeof createEventWaiters>;
