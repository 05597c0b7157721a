import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Redis from "ioredis";
import type { Revocation } from "../../server/auth/caller-cache";
import { REVOKE_WAIT_MS } from "../../server/auth/revoker";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { createSharedNumber } from "../fixtures-numbers";
import { createTestContext, freshDatabase, type TestContext } from "../helpers";
import { startRedis, until } from "./harness";

/**
 * The revocation guarantee when instances fail (docs/architecture.md, "Revocation: the guarantee
 * and how it holds"): a registered instance that never acknowledges, and an instance that cannot
 * reach Redis at all.
 */
describe.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)("revocations when an instance fails (needs DATABASE_URL and REDIS_URL)", () => {
  let url: string;
  let prefix: string;
  let a: TestContext;
  let b: TestContext;
  let redis: Redis;
  beforeAll(async () => {
    url = await freshDatabase(process.env.DATABASE_URL!);
    prefix = `simhost-test-${crypto.randomUUID().slice(0, 8)}:`;
    a = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix });
    b = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix });
    redis = new Redis(process.env.REDIS_URL!);
  });
  afterAll(async () => {
    redis?.disconnect();
    await a?.close();
    await b?.close();
  });

  const me = (instance: TestContext, token: string) => instance.request("GET", "/api/me", { token }).then((r) => r.status);

  test("an instance registered but dead: the revoker answers after the log's bound (REVOKE_WAIT_MS), and the key is refused everywhere", async () => {
    const tenant = await createTenant(a.sql);
    const key = await createApiKey(a.sql, tenant.org.id, ["numbers.read"]);
    expect([await me(a, key.key), await me(b, key.key)]).toEqual([200, 200]);
    // A crashed instance: still in the registry for a few seconds, never acknowledging.
    await redis.zadd(`${prefix}auth:instances`, Date.now() + 60_000, "crashed-instance");
    try {
      const started = performance.now();
      expect((await a.request("DELETE", `/api/api-keys/${key.id}`, { token: tenant.token })).status).toBe(204);
      const took = performance.now() - started;
      expect([await me(a, key.key), await me(b, key.key)]).toEqual([401, 401]);
      expect(took).toBeGreaterThanOrEqual(REVOKE_WAIT_MS - 50);
      expect(took).toBeLessThan(REVOKE_WAIT_MS + 2000);
    } finally {
      await redis.zrem(`${prefix}auth:instances`, "crashed-instance");
    }
  });

  test("an instance without Redis does not use its cache, and the revocation log brings it every revocation", async () => {
    // Same database and prefix, but its Redis is unreachable: it never registers.
    const c = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix, REDIS_URL: "redis://127.0.0.1:1" });
    try {
      const seen: Revocation[] = [];
      c.services.auth.onRevoked((r) => seen.push(r));
      const tenant = await createTenant(a.sql);
      const key = await createApiKey(a.sql, tenant.org.id, ["numbers.read"]);
      expect([await me(a, key.key), await me(c, key.key)]).toEqual([200, 200]);
      expect(c.services.auth.cacheInUse()).toBe(false);
      const started = performance.now();
      expect((await a.request("POST", `/api/api-keys/${key.id}/regenerate`, { token: tenant.token })).status).toBe(200);
      // A heard every registered instance (B) acknowledge: it did not wait for C.
      expect(performance.now() - started).toBeLessThan(REVOKE_WAIT_MS);
      expect(await me(c, key.key)).toBe(401);
      await until("the revocation reached C's listeners through the log", () => seen.some((r) => r.apiKeyId === key.id), 3000);
    } finally {
      await c.close();
    }
  });

  test("an instance without Redis hands no event appended after a sign-out elsewhere to a wait of the signed-out token, however soon it comes", async () => {
    const c = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix, REDIS_URL: "redis://127.0.0.1:1" });
    try {
      for (let round = 0; round < 5; round++) {
        const t = await createTenant(a.sql);
        const other = await createUser(a.sql, { orgId: t.org.id, role: "owner" });
        const otherToken = await sessionFor(a.sql, other.id);
        const sim = await createSharedNumber(a.sql, [t.org.id]);
        const waiting = c.request("GET", "/api/events?after=now&wait=10", { token: t.token });
        await until("the wait registered on C", () => c.services.eventWaiters.size() >= 1, 5000);
        // A answers without C (not registered): C learns of the sign-out from the revocation log.
        expect((await a.request("POST", "/api/auth/logout", { token: t.token })).status).toBe(204);
        // An event appended on C at once wakes C's tail at once.
        expect((await c.request("POST", `/api/numbers/${sim.id}/lock`, { token: otherToken, body: {} })).status).toBe(200);
        const answer = await waiting;
        expect([round, answer.status, answer.body?.data?.length ?? 0]).toEqual([round, 401, 0]);
      }
    } finally {
      await c.close();
    }
  });

  test("Redis restarted (subscriptions dropped, the registry gone): a revocation right after is refused on both instances as soon as it answers, every round", async () => {
    const own = await startRedis();
    if (typeof own === "string") return console.warn(`revocation after a Redis restart: skipped (${own})`);
    const env = { DATABASE_URL: url, REDIS_PREFIX: `simhost-test-${crypto.randomUUID().slice(0, 8)}:`, REDIS_URL: own.url };
    const [x, y] = [await createTestContext(env), await createTestContext(env)];
    const control = new Redis(own.url);
    try {
      const tenant = await createTenant(x.sql);
      for (let round = 0; round < 3; round++) {
        const key = await createApiKey(x.sql, tenant.org.id, ["numbers.read"]);
        // Both registered and subscribed (again), and Y serving the key from its cache.
        await until("both instances use their caches", () => x.services.auth.cacheInUse() && y.services.auth.cacheInUse(), 5000);
        expect([await me(y, key.key), await me(y, key.key)]).toEqual([200, 200]);
        // What a restart of a Redis that keeps nothing does to the instances: the registry gone, every subscription dropped.
        await control.del(`${env.REDIS_PREFIX}auth:instances`);
        await control.call("CLIENT", "KILL", "TYPE", "pubsub");
        expect((await x.request("DELETE", `/api/api-keys/${key.id}`, { token: tenant.token })).status).toBe(204);
        for (let i = 0; i < 20; i++) expect([round, i, await me(y, key.key)]).toEqual([round, i, 401]);
      }
    } finally {
      control.disconnect();
      await x.close();
      await y.close();
      await own.stop();
    }
  }, 60_000);
});
