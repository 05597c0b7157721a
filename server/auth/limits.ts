import { AppError } from "../errors";
import type { RateLimiter } from "../lib/rate-limit";

/** API.md §2: 10 failed sign-ins in 15 minutes, per email and per client address. */
export const MAX_FAILURES = 10;
export const WINDOW_SECONDS = 15 * 60;

export const emailKey = (email: string) => `login:email:${email.trim().toLowerCase()}`;
export const addressKey = (address: string) => `login:ip:${address}`;
export const totpUserKey = (userId: number) => `totp:user:${userId}`;

export function rateLimited(retryAfter: number) {
  const seconds = Math.max(1, retryAfter);
  return new AppError(429, "rate_limited", `Too many failed attempts; try again in ${seconds} seconds.`, {
    headers: { "retry-after": String(seconds) },
  });
}

/** Failure counters over fixed windows; a key with MAX_FAILURES failures refuses further attempts until its window ends. */
export function createFailureLimits(limiter: RateLimiter) {
  return {
    async assertAllowed(keys: string[]) {
      for (const key of keys) {
        const { count, resetIn } = await limiter.peek(key);
        if (count >= MAX_FAILURES) throw rateLimited(resetIn);
      }
    },
    async recordFailure(keys: string[]) {
      await Promise.all(keys.map((key) => limiter.hit(key, WINDOW_SECONDS)));
    },
    async clear(key: string) {
      await limiter.reset(key);
    },
  };
}

export type FailureLimits = ReturnType<typeof createFailureLimits>;
