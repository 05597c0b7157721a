import type Redis from "ioredis";

/**
 * Every Redis use of a request path goes through `run`: one deadline, one fallback, one place
 * that decides what "Redis is down" means. Redis only ever shares state between instances (rate
 * limit counters, realtime grants, the caller cache), so each use has an in-process answer that is
 * right for this instance alone; a request never waits on Redis longer than `timeoutMs`, and after
 * a failure Redis is skipped for `pauseMs` so an outage costs no deadline per request.
 *
 * What falls back to what (docs/architecture.md "Redis outage"):
 * - rate limits: in-process counters (server/lib/rate-limit.ts);
 * - realtime grants: this instance's copy (server/realtime/grants.ts);
 * - bus messages: this instance only (server/events/bus.ts, its own connections; the event tail
 *   polls the log, so realtime still reaches every instance's sockets);
 * - revocations: this instance only; every instance re-checks its sockets when its bus reconnects.
 */
export type RedisGuard = {
  run<T>(op: (redis: Redis) => Promise<T>, fallback: () => T | Promise<T>): Promise<T>;
  /** False while Redis is known to be failing (the last use failed less than `pauseMs` ago, or the connection is not ready). */
  available(): boolean;
  /** Resolves once connected, or after `ms` (the server starts degraded). */
  ready(ms?: number): Promise<void>;
};

export const REDIS_TIMEOUT_MS = 300;
const PAUSE_MS = 1000;

/** ioredis options for connections a request may wait on: fail fast instead of queueing while disconnected. */
export const REDIS_CLIENT_OPTIONS = {
  lazyConnect: false,
  connectTimeout: 2000,
  commandTimeout: REDIS_TIMEOUT_MS,
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
  retryStrategy: (attempt: number) => Math.min(attempt * 200, 2000),
} as const;

export function createRedisGuard(redis: Redis, opts: { timeoutMs?: number; pauseMs?: number; now?: () => number } = {}): RedisGuard {
  const timeoutMs = opts.timeoutMs ?? REDIS_TIMEOUT_MS;
  const pauseMs = opts.pauseMs ?? PAUSE_MS;
  const now = opts.now ?? Date.now;
  let pausedUntil = 0;
  const available = () => redis.status === "ready" && now() >= pausedUntil;
  return {
    available,
    async ready(ms = 3000) {
      if (redis.status === "ready") return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([new Promise((resolve) => redis.once("ready", resolve)), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
      clearTimeout(timer);
    },
    async run(op, fallback) {
      if (!available()) return fallback();
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`redis: no answer within ${timeoutMs} ms`)), timeoutMs);
        });
        return await Promise.race([op(redis), deadline]);
      } catch {
        pausedUntil = now() + pauseMs;
        return fallback();
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
