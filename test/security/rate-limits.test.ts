import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addressKey, emailKey, MAX_FAILURES } from "../../server/auth/limits";
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

  test("30 parallel wrong passwords from one address over many emails: at most 10 judged", async () => {
    for (const { name, ctx } of contexts) {
      await ctx.services.limiter.reset(addressKey("local"));
      const emails = Array.from({ length: 30 }, () => `nobody-${crypto.randomUUID()}@example.test`);
      const statuses = (await Promise.all(emails.map((e) => login(ctx, e, "wrong")))).map((r) => r.status);
      expect({ name, judged: statuses.filter((s) => s === 401).length <= MAX_FAILURES }).toEqual({ name, judged: true });
      await ctx.services.limiter.reset(addressKey("local"));
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
