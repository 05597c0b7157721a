import type { Caller } from "./caller";

/** What a revocation names: every cached caller of that session, API key or user is dropped. */
export type Revocation = { sessionId?: number; apiKeyId?: number; userId?: number };

type Entry = { caller: Caller; until: number };

/**
 * Resolved callers by token digest (and X-Organization-Id), for a few seconds: authenticating
 * every heartbeat against the database would cost more than the heartbeat. Revocations made
 * through the API drop entries at once on every instance (the authenticator fans them out on the
 * bus); anything changed behind the API's back (admin commands on the database) is seen within
 * `ttlMs`. Bounded: past `max` entries the oldest go first.
 */
export function createCallerCache(opts: { ttlMs: number; max: number; now: () => number }) {
  const entries = new Map<string, Entry>();
  return {
    get(key: string): Caller | undefined {
      const e = entries.get(key);
      if (!e) return undefined;
      if (e.until <= opts.now()) {
        entries.delete(key);
        return undefined;
      }
      return e.caller;
    },
    set(key: string, caller: Caller, expiresAt?: number) {
      if (entries.size >= opts.max) entries.delete(entries.keys().next().value as string);
      entries.set(key, { caller, until: Math.min(opts.now() + opts.ttlMs, expiresAt ?? Number.POSITIVE_INFINITY) });
    },
    forget(r: Revocation) {
      for (const [key, { caller }] of entries) {
        if (
          (r.sessionId !== undefined && caller.sessionId === r.sessionId) ||
          (r.apiKeyId !== undefined && caller.apiKey?.id === r.apiKeyId) ||
          (r.userId !== undefined && caller.user?.id === r.userId)
        )
          entries.delete(key);
      }
    },
    size: () => entries.size,
  };
}
