import type { RedisGuard } from "./redis-guard";

/** Fixed-window counters: in-process, or in Redis so every instance shares them. */
export type RateLimiter = {
  /** Counts one hit on `key`; returns the count in the current window and seconds until it resets. */
  hit(key: string, windowSeconds: number): Promise<{ count: number; resetIn: number }>;
  peek(key: string): Promise<{ count: number; resetIn: number }>;
  /** Takes back one hit of the current window (an attempt counted in advance that turned out fine). */
  release(key: string): Promise<void>;
  reset(key: string): Promise<void>;
};

export function createLocalRateLimiter(now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, { count: number; resetAt: number }>();
  const current = (key: string) => {
    const w = windows.get(key);
    if (w && w.resetAt > now()) return w;
    windows.delete(key);
    return undefined;
  };
  return {
    async hit(key, windowSeconds) {
      if (windows.size > 100_000) for (const k of windows.keys()) current(k); // sweep expired
      const w = current(key) ?? { count: 0, resetAt: now() + windowSeconds * 1000 };
      w.count++;
      windows.set(key, w);
      return { count: w.count, resetIn: Math.ceil((w.resetAt - now()) / 1000) };
    },
    async peek(key) {
      const w = current(key);
      return { count: w?.count ?? 0, resetIn: w ? Math.ceil((w.resetAt - now()) / 1000) : 0 };
    },
    async release(key) {
      const w = current(key);
      if (w && --w.count <= 0) windows.delete(key);
    },
    async reset(key) {
      windows.delete(key);
    },
  };
}

// Decrements only a live window (never creates a key without expiry) and drops it at zero.
const RELEASE_SCRIPT = `if redis.call('exists', KEYS[1]) == 1 and redis.call('decr', KEYS[1]) <= 0 then redis.call('del', KEYS[1]) end return 0`;

/**
 * Counters in Redis, shared by every instance. While Redis fails (the guard's deadline or a known
 * outage) they fall back to this instance's in-process counters: limits still hold, per instance,
 * and go back to the shared counters once Redis answers again.
 */
export function createRedisRateLimiter(guard: RedisGuard, prefix: string, local: RateLimiter = createLocalRateLimiter()): RateLimiter {
  const k = (key: string) => `${prefix}rl:${key}`;
  return {
    hit: (key, windowSeconds) =>
      guard.run(
        async (redis) => {
          const [[, count], [, ttl]] = (await redis.multi().incr(k(key)).ttl(k(key)).exec()) as [[null, number], [null, number]];
          if (ttl < 0) await redis.expire(k(key), windowSeconds);
          return { count, resetIn: ttl < 0 ? windowSeconds : ttl };
        },
        () => local.hit(key, windowSeconds),
      ),
    peek: (key) =>
      guard.run(
        async (redis) => {
          const [[, count], [, ttl]] = (await redis.multi().get(k(key)).ttl(k(key)).exec()) as [[null, string | null], [null, number]];
          return { count: Number(count ?? 0), resetIn: Math.max(0, ttl) };
        },
        () => local.peek(key),
      ),
    // Both places: a hit may have been counted in-process during an outage.
    async release(key) {
      await local.release(key);
      await guard.run(
        (redis) => redis.eval(RELEASE_SCRIPT, 1, k(key)),
        () => undefined,
      );
    },
    async reset(key) {
      await local.reset(key);
      await guard.run(
        (redis) => redis.del(k(key)),
        () => undefined,
      );
    },
  };
}
