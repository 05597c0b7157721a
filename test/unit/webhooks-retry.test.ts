import { describe, expect, test } from "bun:test";
import { createEndpointLimiter } from "../../server/webhooks/endpoint-limiter";
import type { AttemptResult } from "../../server/webhooks/http";
import { parseRetryAfter } from "../../server/webhooks/http";
import { judgeAttempt, retryDelayMs } from "../../server/webhooks/retry-policy";

const failure = (over: Partial<AttemptResult> = {}): AttemptResult => ({
  ok: false,
  httpStatus: 500,
  responseBody: "",
  responseTimeMs: 3,
  error: "HTTP 500",
  retryAfterMs: null,
  ...over,
});

describe("retry policy", () => {
  test("exponential from ~5 s with ±20% jitter, capped at 10 minutes", () => {
    expect(retryDelayMs(1, null, () => 0.5)).toBe(5_000);
    expect(retryDelayMs(2, null, () => 0.5)).toBe(10_000);
    expect(retryDelayMs(1, null, () => 0)).toBe(4_000);
    expect(retryDelayMs(1, null, () => 1)).toBe(6_000);
    expect(retryDelayMs(12, null, () => 0.5)).toBe(600_000);
  });

  test("Retry-After wins, within 1 s .. 1 h", () => {
    expect(retryDelayMs(1, 30_000)).toBe(30_000);
    expect(retryDelayMs(1, 0)).toBe(1_000);
    expect(retryDelayMs(1, 86_400_000)).toBe(3_600_000);
    expect(parseRetryAfter("120", 0)).toBe(120_000);
    expect(parseRetryAfter(new Date(60_000).toUTCString(), 0)).toBe(60_000);
    expect(parseRetryAfter("soon", 0)).toBeNull();
  });

  test("retry_count retries after the first attempt, then failed; 0 means one attempt", () => {
    expect(judgeAttempt(failure(), 1, 0, false)).toEqual({ status: "failed", disable: null });
    expect(judgeAttempt(failure(), 1, 2, false).status).toBe("retrying");
    expect(judgeAttempt(failure(), 3, 2, false).status).toBe("failed");
    expect(judgeAttempt({ ...failure(), ok: true, httpStatus: 200, error: null }, 1, 2, false)).toEqual({ status: "succeeded" });
  });

  test("410 Gone and a failure run past the disable period end the delivery and disable the integration", () => {
    expect(judgeAttempt(failure({ httpStatus: 410 }), 1, 5, false)).toMatchObject({ status: "failed", disable: expect.stringContaining("410") });
    expect(judgeAttempt(failure(), 1, 5, true)).toMatchObject({ status: "failed", disable: expect.stringContaining("disable period") });
  });
});

describe("per-endpoint limiter", () => {
  test("admits up to the cap per endpoint; other endpoints are unaffected", () => {
    const limiter = createEndpointLimiter({ cap: 2, random: () => 0.5 });
    const a1 = limiter.tryAcquire("a");
    const a2 = limiter.tryAcquire("a");
    expect("release" in a1 && "release" in a2).toBe(true);
    expect("retryInMs" in limiter.tryAcquire("a")).toBe(true);
    expect("release" in limiter.tryAcquire("b")).toBe(true);
    if ("release" in a1) a1.release(10);
    expect("release" in limiter.tryAcquire("a")).toBe(true);
  });

  test("the wait grows with the endpoint's latency and with how many it turned away", () => {
    const limiter = createEndpointLimiter({ cap: 1, random: () => 0.5 });
    const slot = limiter.tryAcquire("slow");
    if ("release" in slot) slot.release(20_000);
    limiter.tryAcquire("slow");
    const first = limiter.tryAcquire("slow");
    const second = limiter.tryAcquire("slow");
    expect("retryInMs" in first && first.retryInMs).toBeGreaterThanOrEqual(20_000);
    expect("retryInMs" in second && "retryInMs" in first && second.retryInMs > first.retryInMs).toBe(true);
  });
});
