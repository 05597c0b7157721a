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
  test("admits up to the cap per endpoint; other endpoints are unaffected", async () => {
    const limiter = createEndpointLimiter({ cap: 2, maxWaiting: 0, random: () => 0.5 });
    const a1 = await limiter.acquire("a");
    const a2 = await limiter.acquire("a");
    expect("release" in a1 && "release" in a2).toBe(true);
    expect("retryInMs" in (await limiter.acquire("a"))).toBe(true);
    expect("release" in (await limiter.acquire("b"))).toBe(true);
    if ("release" in a1) a1.release(10);
    expect("release" in (await limiter.acquire("a"))).toBe(true);
    expect(limiter.inFlight("a")).toBe(2);
  });

  test("a fast endpoint at the cap hands its slot to a short FIFO of waiters", async () => {
    const limiter = createEndpointLimiter({ cap: 1, maxWaiting: 1 });
    const first = await limiter.acquire("fast");
    const waiting = limiter.acquire("fast");
    expect("retryInMs" in (await limiter.acquire("fast"))).toBe(true);
    if ("release" in first) first.release(5);
    const second = await waiting;
    expect("release" in second).toBe(true);
    expect(limiter.inFlight("fast")).toBe(1);
  });

  test("a slow endpoint turns deliveries away at once, with a wait that grows with its latency and backlog", async () => {
    const limiter = createEndpointLimiter({ cap: 1, random: () => 0.5 });
    const slot = await limiter.acquire("slow");
    if ("release" in slot) slot.release(20_000);
    await limiter.acquire("slow");
    const first = await limiter.acquire("slow");
    const second = await limiter.acquire("slow");
    expect("retryInMs" in first && first.retryInMs).toBeGreaterThanOrEqual(20_000);
    expect("retryInMs" in second && "retryInMs" in first && second.retryInMs > first.retryInMs).toBe(true);
  });
});
