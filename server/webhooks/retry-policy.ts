import type { AttemptResult } from "./http";

export const FIRST_RETRY_MS = 5_000;
export const MAX_BACKOFF_MS = 600_000;
/** The longest Retry-After we honour; a receiver cannot park a delivery for days. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * Delay before the retry that follows failed attempt `attempt` (1-based): exponential from
 * ~5 s, capped at 10 min, with ±20% jitter so a burst of failures does not come back as a
 * burst. A Retry-After from the receiver wins, within [1 s, 1 h].
 */
export function retryDelayMs(attempt: number, retryAfterMs: number | null, random: () => number = Math.random): number {
  if (retryAfterMs !== null) return Math.min(MAX_RETRY_AFTER_MS, Math.max(1_000, retryAfterMs));
  const base = Math.min(FIRST_RETRY_MS * 2 ** (attempt - 1), MAX_BACKOFF_MS);
  return Math.round(base * (0.8 + random() * 0.4));
}

export type Verdict = { status: "succeeded" } | { status: "retrying"; delayMs: number } | { status: "failed"; disable: string | null };

/**
 * What an attempt means for its delivery. `retryCount` is the number of retries after the first
 * attempt. A 410 Gone ends the delivery and disables the integration at once; a failure while
 * the integration has been failing past the disable period ends it too.
 */
export function judgeAttempt(r: AttemptResult, attempt: number, retryCount: number, failingTooLong: boolean, random?: () => number): Verdict {
  if (r.ok) return { status: "succeeded" };
  if (r.httpStatus === 410) return { status: "failed", disable: "the endpoint answered 410 Gone" };
  if (failingTooLong) return { status: "failed", disable: "every delivery has failed for longer than the disable period" };
  if (attempt <= retryCount) return { status: "retrying", delayMs: retryDelayMs(attempt, r.retryAfterMs, random) };
  return { status: "failed", disable: null };
}
