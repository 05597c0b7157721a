import { AppError } from "../errors";
import type { RateLimiter } from "../lib/rate-limit";

/** A hard cap: 10 failures in 15 minutes (2FA enable/disable and password changes per user; sign-ins use login-limits.ts). */
export const MAX_FAILURES = 10;
export const WINDOW_SECONDS = 15 * 60;

export const emailKey = (email: string) => `login:email:${email.trim().toLowerCase()}`;
export const addressKey = (address: string) => `login:ip:${address}`;
export const pairKey = (email: string, address: string) => `login:pair:${email.trim().toLowerCase()}|${address}`;
export const totpUserKey = (userId: number) => `totp:user:${userId}`;
export const passwordUserKey = (userId: number) => `password:user:${userId}`;

export function rateLimited(retryAfter: number) {
  const seconds = Math.max(1, retryAfter);
  return new AppError(429, "rate_limited", `Too many failed attempts; try again in ${seconds} seconds.`, {
    headers: { "retry-after": String(seconds) },
  });
}

/** Failure counters over fixed windows; a key with MAX_FAILURES failures refuses further attempts until its window ends. */
export function createFailureLimits(limiter: RateLimiter) {
  /**
   * Counts the attempt as a failure before it is judged, so a burst of parallel attempts cannot
   * all pass a check made before any of them failed: at most MAX_FAILURES are judged per window.
   * A refused attempt takes its counts back (`retryIn` set); one that succeeds calls `release`.
   */
  async function tryReserve(keys: string[]): Promise<{ release: () => Promise<void>; retryIn?: number }> {
    const counts = await Promise.all(keys.map((key) => limiter.hit(key, WINDOW_SECONDS)));
    const release = async () => {
      await Promise.all(keys.map((key) => limiter.release(key)));
    };
    const over = counts.find((c) => c.count > MAX_FAILURES);
    if (!over) return { release };
    await release();
    return { release: async () => {}, retryIn: Math.max(1, over.resetIn) };
  }
  /** tryReserve that answers 429 when a key is used up. */
  async function reserve(keys: string[]): Promise<{ release: () => Promise<void> }> {
    const attempt = await tryReserve(keys);
    if (attempt.retryIn) throw rateLimited(attempt.retryIn);
    return attempt;
  }
  async function clear(key: string) {
    await limiter.reset(key);
  }
  return { tryReserve, reserve, clear };
}

export type FailureLimits = ReturnType<typeof createFailureLimits>;
