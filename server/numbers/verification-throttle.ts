import { Counter } from "prom-client";
import type { Sql } from "../db/client";
import type { Clock } from "../lib/clock";
import type { Metrics } from "../lib/metrics";
import { countAttempts, dropEndedWindows, uncountAttempts } from "./throttle-store";

/**
 * Verification codes are 4 characters of a 31-symbol alphabet (923,521 codes) living 5 minutes.
 * A sender or a device that sent `limit` wrong codes within a window has every further code
 * ignored, the right one too, for a whole window from the first ignored one: 5 per 15 minutes
 * stops a burst, 20 per day bounds a patient guesser (docs/api-notes.md "Verification codes
 * cannot be guessed").
 */
export const WRONG_CODE_TIERS = [
  { name: "15m", windowMs: 15 * 60 * 1000, limit: 5 },
  { name: "day", windowMs: 24 * 60 * 60 * 1000, limit: 20 },
] as const;

/** Keys: the sender's number (the provider callback's From), and the device a code can be attributed to. */
export const senderKey = (number: string) => `from:${number}`;
export const deviceKey = (deviceId: number) => `device:${deviceId}`;

/** An attempt counted in advance; `release` takes it back once it turned out not to be a wrong code. */
export type Hold = { allowed: boolean; release: () => Promise<void> };

const METRIC = "simhost_verification_codes_total";

function outcomeCounter(metrics?: Metrics): Counter<"outcome"> | null {
  if (!metrics) return null;
  const existing = metrics.registry.getSingleMetric(METRIC) as Counter<"outcome"> | undefined;
  return (
    existing ??
    new Counter({
      name: METRIC,
      help: "Verification codes received by outcome (wrong, throttled, verified, ...)",
      labelNames: ["outcome"],
      registers: [metrics.registry],
    })
  );
}

/**
 * Counts each code before it is judged, so a burst of parallel guesses cannot all pass a check
 * made before any of them failed; a code that was not wrong gives its count back. Stored in
 * PostgreSQL, so the limit holds across instances with or without Redis.
 */
export function createVerificationThrottle(deps: { sql: Sql; clock: Clock; metrics?: Metrics }) {
  const counter = outcomeCounter(deps.metrics);
  /** Counts one code on every tier of `key`; allowed when no tier is used up. */
  async function reserve(key: string): Promise<Hold> {
    const now = new Date(deps.clock.now());
    const windows = WRONG_CODE_TIERS.map((tier) => ({ key: `${key}:${tier.name}`, windowMs: tier.windowMs, limit: tier.limit }));
    const counts = await countAttempts(deps.sql, windows, now);
    if (counts[0] === 1) await dropEndedWindows(deps.sql, new Date(now.getTime() - WRONG_CODE_TIERS[0].windowMs));
    const allowed = counts.every((n, i) => n <= windows[i]!.limit);
    const release = () =>
      uncountAttempts(
        deps.sql,
        windows.map((w) => w.key),
        new Date(deps.clock.now()),
      );
    return { allowed, release: allowed ? release : async () => {} };
  }
  /** One code's outcome, for the metric. */
  function record(outcome: string) {
    counter?.inc({ outcome });
  }
  return { reserve, record };
}

export type VerificationThrottle = ReturnType<typeof createVerificationThrottle>;
