import type { Clock } from "../lib/clock";
import type { Caller } from "./caller";

/**
 * What a revocation names: every cached caller of that session, API key or user is dropped, and
 * every realtime subscription it authorized ends. `grantId`: an OAuth grant, every token issued
 * from one authorization (its access tokens' rows are revoked by `sessionId` alongside; a
 * subscription names its grant, since it outlives the access token it began with). `organizationId` with `userId`: only the user's
 * access to that organization went (membership removed): callers acting or reading in it. `organizationId` alone: callers acting
 * in that organization (a cache-only invalidation after a plan change, never sent to listeners).
 * `everything`: this instance may have missed revocations (it could not read the revocation log
 * for longer than the log keeps rows), so nothing it holds may be trusted.
 */
export type Revocation = { sessionId?: number; grantId?: string; apiKeyId?: number; userId?: number; organizationId?: number; everything?: true };

/**
 * A change the credential module spreads: a revocation (listeners run: sockets end), or with
 * `cacheOnly` a change of what a caller may do (role, plan) that only the cache must forget.
 */
export type Invalidation = { revocation: Revocation; cacheOnly?: true };

type Entry = { caller: Caller; until: number };

export function matches(r: Revocation, caller: Caller): boolean {
  if (r.everything) return true;
  if (r.sessionId !== undefined) return caller.sessionId === r.sessionId;
  if (r.apiKeyId !== undefined) return caller.apiKey?.id === r.apiKeyId;
  // A cached caller is one access token: its row's revocation (`sessionId`) comes alongside its grant's.
  if (r.grantId !== undefined) return false;
  // A membership's end also drops callers that only read in that organization (their readScope).
  if (r.userId !== undefined)
    return (
      caller.user?.id === r.userId &&
      (r.organizationId === undefined || caller.organization.id === r.organizationId || caller.readScope.includes(r.organizationId))
    );
  if (r.organizationId !== undefined) return caller.organization.id === r.organizationId;
  return false;
}

/**
 * Resolved callers by token digest (and X-Organization-Id), for a few seconds: authenticating
 * every heartbeat against the database would cost more than the heartbeat. Bounded: past `max`
 * entries the oldest go first.
 *
 * Invariant: no entry outlives a revocation that matches it. `forget` drops the matching
 * entries and moves the generation on; a lookup reads `generation()` before its database read
 * and `set` refuses it if any revocation was applied since, because that lookup may have read
 * the database before the revocation committed. Entries expire by the server clock; the
 * freshness of the revocation log that licenses the cache (credentials.ts) is measured on the
 * monotonic clock instead, on purpose (a wall-clock step must not extend it).
 */
export function createCallerCache(opts: { ttlMs: number; max: number; clock: Pick<Clock, "now"> }) {
  const entries = new Map<string, Entry>();
  let generation = 0;
  return {
    get(key: string): Caller | undefined {
      const e = entries.get(key);
      if (!e) return undefined;
      if (e.until <= opts.clock.now()) {
        entries.delete(key);
        return undefined;
      }
      return e.caller;
    },
    generation: () => generation,
    /**
     * Stores a lookup that began at generation `since`, until its credential expires at the latest
     * (`expiresAt`, null: it does not); false (nothing stored) if a revocation came in between.
     */
    set(key: string, caller: Caller, since: number, expiresAt: number | null = null): boolean {
      if (since !== generation) return false;
      if (entries.size >= opts.max) entries.delete(entries.keys().next().value as string);
      entries.set(key, { caller, until: Math.min(opts.clock.now() + opts.ttlMs, expiresAt ?? Number.POSITIVE_INFINITY) });
      return true;
    },
    forget(r: Revocation) {
      generation += 1;
      if (r.everything) return entries.clear();
      for (const [key, { caller }] of entries) if (matches(r, caller)) entries.delete(key);
    },
    size: () => entries.size,
  };
}
