import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addressKey, emailKey, MAX_FAILURES, pairKey, WINDOW_SECONDS } from "../../server/auth/limits";
import { createLoginFlow } from "../../server/auth/login";
import { LOGIN_LIMITS } from "../../server/auth/login-limits";
import { systemClock } from "../../server/lib/clock";
import { createTenant, TEST_PASSWORD } from "../fixtures";
import { clockedContext } from "../fixtures-devices";
import { sharedTestContext, type TestContext } from "../helpers";
import { enableTotp, TEST_TOTP_SECRET, totpCode } from "../integration/oauth-flow";

/**
 * Login rate limits hold under parallel attempts (issue 9, item 4): a burst of wrong passwords
 * for one email gets at most MAX_FAILURES judged (401), the rest 429, and then even the right
 * password is refused. Run with the in-process limiter, and with the Redis one when REDIS_URL is set.
 */
type Ctx = Pick<TestContext, "request" | "services" | "sql">;
const contexts: { name: string; ctx: Ctx; close?: () => Promise<void> }[] = [];

beforeAll(async () => {
  const base = await sharedTestContext();
  const local = await clockedContext(base, systemClock, { REDIS_URL: undefined });
  contexts.push({ name: "in-process limiter", ctx: local, close: local.close });
  if (process.env.REDIS_URL) {
    const redis = await clockedContext(base, systemClock, {
      REDIS_URL: process.env.REDIS_URL,
      REDIS_PREFIX: `simhost-sec-${crypto.randomUUID().slice(0, 8)}:`,
    });
    contexts.push({ name: "Redis limiter", ctx: redis, close: redis.close });
  }
}, 60_000);

afterAll(async () => {
  for (const c of contexts) await c.close?.();
});

const login = (ctx: Ctx, email: string, password: string) => ctx.request("POST", "/api/auth/login", { body: { email, password } });
/** The login flow itself, to sign in from any client address (in-process requests all come from `local`). */
const flowOf = (ctx: Ctx) => createLoginFlow({ sql: ctx.sql, limiter: ctx.services.limiter, clock: systemClock, sessionTtlDays: 1 });
const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e: { status?: number }) => e.status ?? 500,
  );

describe("login rate limits under parallel attempts", () => {
  test("30 parallel wrong passwords for one email: at most 10 judged, the rest 429; the right password then 429", async () => {
    for (const { name, ctx } of contexts) {
      const { user } = await createTenant(ctx.sql);
      await ctx.services.limiter.reset(addressKey("local"));
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => login(ctx, user.email, `wrong-${i}`)));
      const statuses = answers.map((r) => r.status);
      const judged = statuses.filter((s) => s === 401).length;
      expect({ name, judged: judged <= MAX_FAILURES, other: statuses.filter((s) => s !== 401 && s !== 429) }).toEqual({ name, judged: true, other: [] });
      expect(statuses.filter((s) => s === 429).length).toBe(30 - judged);
      await ctx.services.limiter.reset(addressKey("local"));
      expect((await login(ctx, user.email, TEST_PASSWORD)).status).toBe(429);
      await ctx.services.limiter.reset(emailKey(user.email));
      await ctx.services.limiter.reset(addressKey("local"));
    }
  }, 60_000);

  test("a spray over many accounts from one address stops at the address's ceiling, correct passwords included", async () => {
    for (const { name, ctx } of contexts) {
      const address = `spray-${crypto.randomUUID()}`;
      const flow = flowOf(ctx);
      for (let i = 0; i < LOGIN_LIMITS.addressCeiling - 10; i++) await ctx.services.limiter.hit(addressKey(address), WINDOW_SECONDS);
      const emails = Array.from({ length: 30 }, () => `nobody-${crypto.randomUUID()}@example.test`);
      const statuses = await Promise.all(emails.map((e) => statusOf(flow.login(e, "wrong", address))));
      expect({ name, judged: statuses.filter((s) => s === 401).length <= 10, other: statuses.filter((s) => s !== 401 && s !== 429) }).toEqual({
        name,
        judged: true,
        other: [],
      });
      const { user } = await createTenant(ctx.sql);
      expect(await statusOf(flow.login(user.email, TEST_PASSWORD, address))).toBe(429);
      expect(await statusOf(flow.login(user.email, TEST_PASSWORD, `elsewhere-${address}`))).toBe(200);
    }
  }, 60_000);

  test("15 parallel wrong 2FA codes over three tmp_tokens of one account: at most 10 judged", async () => {
    for (const { name, ctx } of contexts) {
      const { user } = await createTenant(ctx.sql);
      await enableTotp(ctx.sql, user.id);
      const tmpTokens: string[] = [];
      for (let i = 0; i < 3; i++) {
        await ctx.services.limiter.reset(addressKey("local"));
        const res = await login(ctx, user.email, TEST_PASSWORD);
        expect(res.body["2fa_required"]).toBe(true);
        tmpTokens.push(res.body.tmp_token);
      }
      await ctx.services.limiter.reset(addressKey("local"));
      const wrong = totpCode(TEST_TOTP_SECRET, Date.now() + 10 * 60_000);
      const attempts = tmpTokens.flatMap((tmp_token) => Array.from({ length: 5 }, () => ({ tmp_token, code: wrong })));
      const statuses = (await Promise.all(attempts.map((body) => ctx.request("POST", "/api/auth/2fa/verify", { body })))).map((r) => r.status);
      expect({ name, judged: statuses.filter((s) => s === 401).length <= MAX_FAILURES }).toEqual({ name, judged: true });
      expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
      await ctx.services.limiter.reset(addressKey("local"));
      await ctx.services.limiter.reset(emailKey(user.email));
    }
  }, 60_000);

  test("parallel right passwords are not held back by the reservation: a correct burst signs in", async () => {
    for (const { ctx } of contexts) {
      const { user } = await createTenant(ctx.sql);
      await ctx.services.limiter.reset(addressKey("local"));
      const statuses = (await Promise.all(Array.from({ length: 3 }, () => login(ctx, user.email, TEST_PASSWORD)))).map((r) => r.status);
      expect(statuses).toEqual([200, 200, 200]);
      await ctx.services.limiter.reset(addressKey("local"));
    }
  }, 60_000);
});

describe("login limits that do not lock out a whole office (OWASP: per account, per account and address, a high per-address ceiling)", () => {
  test("10 failures on account A from one address do not stop B's correct login from that address; A itself is throttled there", async () => {
    for (const { name, ctx } of contexts) {
      await ctx.services.limiter.reset(addressKey("local"));
      const a = await createTenant(ctx.sql);
      const b = await createTenant(ctx.sql);
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push((await login(ctx, a.user.email, `wrong-${i}`)).status);
      expect({ name, statuses }).toEqual({ name, statuses: Array(10).fill(401) });
      const throttled = await login(ctx, a.user.email, TEST_PASSWORD);
      expect({ name, status: throttled.status }).toEqual({ name, status: 429 });
      expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
      expect({ name, b: (await login(ctx, b.user.email, TEST_PASSWORD)).status }).toEqual({ name, b: 200 });
      // The throttle is the pair's: A's owner signs in from another address.
      expect(await statusOf(flowOf(ctx).login(a.user.email, TEST_PASSWORD, `other-${crypto.randomUUID()}`))).toBe(200);
      await ctx.services.limiter.reset(addressKey("local"));
    }
  }, 60_000);

  test("failures on one account spread over many addresses throttle that account, not others behind those addresses", async () => {
    for (const { name, ctx } of contexts) {
      const flow = flowOf(ctx);
      const a = await createTenant(ctx.sql);
      const b = await createTenant(ctx.sql);
      const run = crypto.randomUUID();
      const statuses: number[] = [];
      for (let i = 0; i < LOGIN_LIMITS.accountFree; i++) statuses.push(await statusOf(flow.login(a.user.email, "wrong", `${run}-${i}`)));
      expect({ name, statuses }).toEqual({ name, statuses: Array(LOGIN_LIMITS.accountFree).fill(401) });
      expect(await statusOf(flow.login(a.user.email, TEST_PASSWORD, `${run}-new`))).toBe(429);
      expect(await statusOf(flow.login(b.user.email, TEST_PASSWORD, `${run}-0`))).toBe(200);
    }
  }, 60_000);

  test("past its free failures, a pair waits before each attempt, the wait doubling with each failure", async () => {
    for (const { name, ctx } of contexts) {
      const flow = flowOf(ctx);
      const { user } = await createTenant(ctx.sql);
      const address = `delay-${crypto.randomUUID()}`;
      const retryAfter = async () => {
        const refused = await flow.login(user.email, TEST_PASSWORD, address).then(
          () => null,
          (e: { status: number; extra?: { headers?: Record<string, string> } }) => e,
        );
        expect({ name, status: refused?.status }).toEqual({ name, status: 429 });
        return Number(refused!.extra?.headers?.["retry-after"]);
      };
      for (let i = 0; i < LOGIN_LIMITS.pairFree; i++) expect(await statusOf(flow.login(user.email, "wrong", address))).toBe(401);
      const first = await retryAfter();
      expect(first).toBeGreaterThan(LOGIN_LIMITS.firstDelay - 5);
      expect(first).toBeLessThanOrEqual(LOGIN_LIMITS.firstDelay);
      // The wait is over (as if a minute passed): one attempt is judged, and the next wait is twice as long.
      await ctx.services.limiter.reset(`${pairKey(user.email, address)}:wait`);
      expect(await statusOf(flow.login(user.email, "wrong", address))).toBe(401);
      const second = await retryAfter();
      expect(second).toBeGreaterThan(2 * LOGIN_LIMITS.firstDelay - 5);
      expect(second).toBeLessThanOrEqual(2 * LOGIN_LIMITS.firstDelay);
      // A right password on its turn signs in and forgets the account's failures.
      await ctx.services.limiter.reset(`${pairKey(user.email, address)}:wait`);
      expect(await statusOf(flow.login(user.email, TEST_PASSWORD, address))).toBe(200);
      expect(await statusOf(flow.login(user.email, "wrong", address))).toBe(401);
    }
  }, 60_000);
});
