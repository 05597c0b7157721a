import { describe, expect, test } from "bun:test";
import type { Caller } from "../../server/auth/caller";
import { createCallerCache } from "../../server/auth/caller-cache";
import { credentialsEpoch } from "../../server/auth/store";
import { issueSession } from "../../server/auth/tokens";
import { createFakeClock } from "../fake-clock";
import { createApiKey, createTenant } from "../fixtures";
import { eventually } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, twoInstances } from "../helpers";

const caller = (over: Partial<Caller>): Caller =>
  ({ kind: "session", organization: { id: 1 }, user: { id: 7 }, role: "owner", apiKey: null, sessionId: 3, ...over }) as Caller;

describe("caller cache", () => {
  test("entries live ttl at most, and a revocation drops every entry of its session, key or user", () => {
    const clock = createFakeClock(0);
    const cache = createCallerCache({ ttlMs: 10_000, max: 10, clock });
    cache.set("a|", caller({}), 0);
    cache.set("a|2", caller({}), 0);
    cache.set("k|", caller({ kind: "api_key", user: null, sessionId: null, apiKey: { id: 9, name: "k", permissions: [] } }), 0);
    cache.forget({ sessionId: 3 });
    expect([cache.get("a|"), cache.get("a|2")]).toEqual([undefined, undefined]);
    expect(cache.get("k|")).toBeDefined();
    cache.forget({ apiKeyId: 9 });
    expect(cache.get("k|")).toBeUndefined();
    cache.set("b|", caller({ sessionId: 4 }), cache.generation());
    clock.advance(9_999);
    expect(cache.get("b|")).toBeDefined();
    clock.advance(1);
    expect(cache.get("b|")).toBeUndefined();
  });

  test("a lookup that began before a revocation is not stored after it", () => {
    const cache = createCallerCache({ ttlMs: 10_000, max: 10, clock: createFakeClock(0) });
    const since = cache.generation();
    cache.forget({ sessionId: 3 });
    expect(cache.set("a|", caller({}), since)).toBe(false);
    expect(cache.get("a|")).toBeUndefined();
    expect(cache.set("a|", caller({}), cache.generation())).toBe(true);
  });

  test("an entry lives no longer than its credential: until its expiry when that comes first", () => {
    const clock = createFakeClock(0);
    const cache = createCallerCache({ ttlMs: 10_000, max: 10, clock });
    cache.set("e|", caller({}), cache.generation(), 3_000);
    clock.advance(2_999);
    expect(cache.get("e|")).toBeDefined();
    clock.advance(1);
    expect(cache.get("e|")).toBeUndefined();
  });

  test("bounded: past max entries the oldest go", () => {
    const cache = createCallerCache({ ttlMs: 10_000, max: 2, clock: createFakeClock(0) });
    for (const k of ["x", "y", "z"]) cache.set(k, caller({}), 0);
    expect([cache.get("x"), cache.size()]).toEqual([undefined, 2]);
  });
});

describe("cache keys", () => {
  test("an empty X-Organization-Id answers 404 whether or not the same token's call without the header was cached", async () => {
    const ctx = await sharedTestContext();
    const { token } = await createTenant(ctx.sql);
    const empty = () => ctx.request("GET", "/api/teams", { token, headers: { "x-organization-id": "" } });
    expect((await empty()).status).toBe(404);
    expect((await ctx.request("GET", "/api/teams", { token })).status).toBe(200);
    const after = await empty();
    expect(after.status).toBe(404);
    expectErrorShape(after.body, "not_found");
  });
});

describe("revocations take effect at once", () => {
  test("a cached session: logout answers 401 on the very next request", async () => {
    const ctx = await sharedTestContext();
    const { token } = await createTenant(ctx.sql);
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(200);
    expect((await ctx.request("POST", "/api/auth/logout", { token })).status).toBe(204);
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(401);
  });

  test("a cached token that expires answers 401 from its expiry on, not up to the cache's 10 s later", async () => {
    const ctx = await sharedTestContext();
    const { user } = await createTenant(ctx.sql);
    const session = await issueSession(ctx.sql, user.id, { kind: "oauth", ttlSeconds: 2, epoch: (await credentialsEpoch(ctx.sql, user.id))! });
    expect(ctx.services.auth.cacheInUse()).toBe(true);
    expect((await ctx.request("GET", "/api/me", { token: session!.token })).status).toBe(200);
    await eventually(async () => Date.now() > session!.expiresAt.getTime(), 10_000, "the token's expiry");
    expect((await ctx.request("GET", "/api/me", { token: session!.token })).status).toBe(401);
  });

  test.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(
    "across two instances (Redis): a key regenerated on B stops working on A at once",
    async () => {
      const { a, b, close } = await twoInstances();
      try {
        const tenant = await createTenant(a.sql);
        const key = await createApiKey(a.sql, tenant.org.id, ["numbers.read"]);
        expect((await a.request("GET", "/api/me", { token: key.key })).status).toBe(200);
        const seen: unknown[] = [];
        a.services.bus.subscribe((m) => seen.push(m));
        expect((await b.request("POST", `/api/api-keys/${key.id}/regenerate`, { token: tenant.token })).status).toBe(200);
        const deadline = Date.now() + 2000;
        let status = 200;
        // Poll with a pause: cache hits do no I/O, so without one the loop would never let A read Redis.
        while (status === 200 && Date.now() < deadline) {
          await Bun.sleep(5);
          status = (await a.request("GET", "/api/me", { token: key.key })).status;
        }
        expect(status).toBe(401);
      } finally {
        await close();
      }
    },
  );
});
