import { beforeAll, describe, expect, test } from "bun:test";
import { addressKey, emailKey } from "../../server/auth/limits";
import { createTenant } from "../fixtures";
import { sharedTestContext, type TestContext } from "../helpers";

/**
 * Login for an unknown email takes about as long as for a known one with a wrong password
 * (API.md §1: "same answer and similar timing for both"), so response times do not tell which
 * emails have accounts. Medians of interleaved attempts; the limiter is reset after each one.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

const N = 5;

describe("login timing", () => {
  test("unknown email vs known email with a wrong password: medians within a factor of 2", async () => {
    const { user } = await createTenant(ctx.sql);
    const attempt = async (email: string) => {
      const started = performance.now();
      const res = await ctx.request("POST", "/api/auth/login", { body: { email, password: "not the password" } });
      const ms = performance.now() - started;
      expect(res.status).toBe(401);
      await ctx.services.limiter.reset(addressKey("local"));
      await ctx.services.limiter.reset(emailKey(email));
      return ms;
    };
    // Warm up both paths (the dummy hash is made on first use).
    await attempt(`warm-${crypto.randomUUID()}@example.test`);
    await attempt(user.email);
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < N; i++) {
      // Alternate which goes first so a burst of load elsewhere hits both alike.
      if (i % 2 === 0) {
        known.push(await attempt(user.email));
        unknown.push(await attempt(`nobody-${crypto.randomUUID()}@example.test`));
      } else {
        unknown.push(await attempt(`nobody-${crypto.randomUUID()}@example.test`));
        known.push(await attempt(user.email));
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const ratio = median(unknown) / median(known);
    expect(ratio).toBeGreaterThan(0.5);
    expect(ratio).toBeLessThan(2);
  }, 60_000);
});
