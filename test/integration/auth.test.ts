import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { buildApp } from "../../server/app";
import { addressKey } from "../../server/auth/limits";
import { LOGIN_LIMITS } from "../../server/auth/login-limits";
import { createApiKey, createTenant, createUser, sessionFor, TEST_PASSWORD } from "../fixtures";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
// Each sign-in verifies an argon2id hash: on a busy machine a test of a dozen sign-ins needs more than the default 5 s.
const slowTest = (name: string, fn: () => Promise<void>) => test(name, fn, 30_000);
// Starting the embedded database can take a while on a busy machine.
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);
// Every in-process request comes from the address "local": keep its failure count from leaking into other tests.
afterEach(async () => {
  await ctx.services.limiter.reset(addressKey("local"));
});

const login = (body: unknown) => ctx.request("POST", "/api/auth/login", { body });

describe("POST /api/auth/login", () => {
  slowTest("right password: a session token that works, with its expiry and the user", async () => {
    const { user } = await createTenant(ctx.sql);
    const res = await login({ email: user.email.toUpperCase(), password: TEST_PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe("Bearer");
    expect(res.body.token).toMatch(/^st_[0-9A-Za-z]{40}$/);
    expect(res.body.user).toMatchObject({ id: user.id, email: user.email, two_factor_enabled: false });
    const days = (Date.parse(res.body.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    expect(res.body.expires_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const me = await ctx.request("GET", "/api/me", { token: res.body.token });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.id);
    expect(me.body.auth_type).toBe("session");
  });

  slowTest("the session token is stored only as a hash", async () => {
    const { user } = await createTenant(ctx.sql);
    const { body } = await login({ email: user.email, password: TEST_PASSWORD });
    const rows = await ctx.sql`select token_hash from sessions where user_id = ${user.id}`;
    for (const r of rows) expect(Buffer.from(r.token_hash).toString("latin1")).not.toContain(body.token);
    const raw = await ctx.sql`select 1 from sessions where user_id = ${user.id} and encode(token_hash, 'escape') like ${`%${body.token}%`}`;
    expect(raw.length).toBe(0);
  });

  slowTest("wrong password and unknown email: the same 401 invalid_credentials", async () => {
    const { user } = await createTenant(ctx.sql);
    const wrong = await login({ email: user.email, password: "not the password" });
    const unknown = await login({ email: `nobody-${crypto.randomUUID()}@example.test`, password: TEST_PASSWORD });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expectErrorShape(wrong.body, "invalid_credentials");
    expectErrorShape(unknown.body, "invalid_credentials");
    expect(unknown.body).toEqual(wrong.body);
  });

  slowTest("an unknown email takes about as long as a wrong password (it is checked against a dummy hash)", async () => {
    const { user } = await createTenant(ctx.sql);
    const time = async (email: string) => {
      const started = performance.now();
      await login({ email, password: "not the password" });
      return performance.now() - started;
    };
    await time(`warm-${crypto.randomUUID()}@example.test`);
    const known = (await time(user.email)) + (await time(user.email));
    const unknown = (await time(`a-${crypto.randomUUID()}@example.test`)) + (await time(`b-${crypto.randomUUID()}@example.test`));
    // An argon2id verification dominates both; without the dummy hash the unknown email would answer in a small fraction.
    expect(unknown).toBeGreaterThan(known * 0.4);
  });

  slowTest("validation: email format and length, password presence and length", async () => {
    const cases: [unknown, string][] = [
      [{ password: "x" }, "email"],
      [{ email: "not-an-email", password: "x" }, "email"],
      [{ email: `${"a".repeat(250)}@example.test`, password: "x" }, "email"],
      [{ email: "a@example.test" }, "password"],
      [{ email: "a@example.test", password: "" }, "password"],
      [{ email: "a@example.test", password: "x".repeat(1025) }, "password"],
      [{ email: "a@example.test", password: 12345678 }, "password"],
    ];
    for (const [body, field] of cases) {
      const res = await login(body);
      expect(res.status).toBe(422);
      expectErrorShape(res.body, "validation_failed");
      expect(Object.keys(res.body.errors)).toContain(field);
    }
    const malformed = await ctx.request("POST", "/api/auth/login", { body: "{not json" });
    expect(malformed.status).toBe(400);
    expectErrorShape(malformed.body, "malformed_body");
  });
});

describe("login rate limiting", () => {
  slowTest("10 failures for one email: the 11th attempt answers 429 with Retry-After, even with the right password", async () => {
    const { user } = await createTenant(ctx.sql);
    for (let i = 0; i < 10; i++) {
      expect((await login({ email: user.email, password: `wrong-${i}` })).status).toBe(401);
      await ctx.services.limiter.reset(addressKey("local"));
    }
    const res = await login({ email: user.email, password: TEST_PASSWORD });
    expect(res.status).toBe(429);
    expectErrorShape(res.body, "rate_limited");
    const retryAfter = Number(res.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(900);
    // Another account from the same address is not affected.
    const other = await createUser(ctx.sql, { orgId: (await createTenant(ctx.sql)).org.id });
    expect((await login({ email: other.email, password: TEST_PASSWORD })).status).toBe(200);
  });

  slowTest("a successful login clears the email's failures", async () => {
    const { user } = await createTenant(ctx.sql);
    for (let i = 0; i < 9; i++) await login({ email: user.email, password: "wrong" });
    expect((await login({ email: user.email, password: TEST_PASSWORD })).status).toBe(200);
    await ctx.services.limiter.reset(addressKey("local"));
    expect((await login({ email: user.email, password: "wrong" })).status).toBe(401);
    expect((await login({ email: user.email, password: TEST_PASSWORD })).status).toBe(200);
  });

  slowTest("failures over many accounts from one client address (over a real socket) do not close it for others, up to its ceiling", async () => {
    const { user } = await createTenant(ctx.sql);
    const app = buildApp(ctx.services).listen({ port: 0, hostname: "127.0.0.1" });
    const url = `http://127.0.0.1:${app.server!.port}/api/auth/login`;
    const post = (body: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    try {
      for (let i = 0; i < 10; i++) {
        expect((await post({ email: `x${i}-${crypto.randomUUID()}@example.test`, password: "wrong" })).status).toBe(401);
      }
      expect((await post({ email: user.email, password: TEST_PASSWORD })).status).toBe(200);
      // The address's ceiling: failures over every account from it, then 429 for everyone behind it.
      for (let i = 10; i < LOGIN_LIMITS.addressCeiling; i++) await ctx.services.limiter.hit(addressKey("127.0.0.1"), 900);
      const res = await post({ email: user.email, password: TEST_PASSWORD });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expectErrorShape(await res.json(), "rate_limited");
      expect((await login({ email: user.email, password: TEST_PASSWORD })).status).toBe(200);
    } finally {
      await app.stop(true);
      await ctx.services.limiter.reset(addressKey("127.0.0.1"));
    }
  });
});

describe("the client address of a versioned request", () => {
  slowTest("/api/v1 and /api/v2 sign-ins count against the socket's address, like unprefixed ones, not one address shared by everyone", async () => {
    const app = buildApp(ctx.services).listen({ port: 0, hostname: "127.0.0.1" });
    const base = `http://127.0.0.1:${app.server!.port}`;
    try {
      const before = await ctx.services.limiter.peek(addressKey("local"));
      for (const prefix of ["/api/v1", "/api/v2", "/api"]) {
        const res = await fetch(`${base}${prefix}/auth/2fa/verify`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ tmp_token: `tt_unknown${crypto.randomUUID()}`, code: "123456" }),
        });
        expect([prefix, res.status]).toEqual([prefix, 401]);
      }
      expect((await ctx.services.limiter.peek(addressKey("127.0.0.1"))).count).toBe(3);
      expect((await ctx.services.limiter.peek(addressKey("local"))).count).toBe(before.count);
    } finally {
      await app.stop(true);
      await ctx.services.limiter.reset(addressKey("127.0.0.1"));
    }
  });
});

describe("POST /api/auth/logout", () => {
  slowTest("204, and the token is dead at once while other sessions live on", async () => {
    const { user, token: other } = await createTenant(ctx.sql);
    const { body } = await login({ email: user.email, password: TEST_PASSWORD });
    const res = await ctx.request("POST", "/api/auth/logout", { token: body.token });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    const after = await ctx.request("GET", "/api/me", { token: body.token });
    expect(after.status).toBe(401);
    expectErrorShape(after.body, "unauthenticated");
    expect((await ctx.request("GET", "/api/me", { token: other })).status).toBe(200);
  });

  slowTest("no token, unknown token: 401; an API key: 403 api_key_not_allowed", async () => {
    const { org } = await createTenant(ctx.sql);
    expectErrorShape((await ctx.request("POST", "/api/auth/logout")).body, "unauthenticated");
    const bad = await ctx.request("POST", "/api/auth/logout", { token: "st_unknown" });
    expect(bad.status).toBe(401);
    const key = await createApiKey(ctx.sql, org.id, ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"]);
    const res = await ctx.request("POST", "/api/auth/logout", { token: key.key });
    expect(res.status).toBe(403);
    expectErrorShape(res.body, "api_key_not_allowed");
    expect((await ctx.request("GET", "/api/me", { token: key.key })).status).toBe(200);
  });
});

describe("POST /api/auth/logout without an organization", () => {
  test("a user removed from every organization (their requests answer 403) can still end their token", async () => {
    const { user, token } = await createTenant(ctx.sql);
    const second = await sessionFor(ctx.sql, user.id);
    await ctx.sql`delete from memberships where user_id = ${user.id}`;
    await ctx.services.auth.revoke({ userId: user.id });
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(403);
    expect((await ctx.request("POST", "/api/auth/logout", { token })).status).toBe(204);
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(401);
    // Only that token: their other one still stands (and still answers 403).
    expect((await ctx.request("GET", "/api/me", { token: second })).status).toBe(403);
    expect((await ctx.request("POST", "/api/auth/logout", { token })).status).toBe(401);
    // A body is not read: a malformed one answered 400 and left the token standing.
    const sent = await ctx.request("POST", "/api/auth/logout", { token: second, body: "{ not json", headers: { "content-type": "application/json" } });
    expect(sent.status).toBe(204);
    expect((await ctx.request("GET", "/api/me", { token: second })).status).toBe(401);
  });
});

describe("OpenAPI document", () => {
  slowTest("documents the auth, API-key and team operations with their request schemas", async () => {
    const { body } = await ctx.request("GET", "/openapi.json");
    const expected: Record<string, string[]> = {
      "/api/auth/login": ["post"],
      "/api/auth/logout": ["post"],
      "/api/auth/2fa/setup": ["post"],
      "/api/auth/2fa/enable": ["post"],
      "/api/auth/2fa/disable": ["post"],
      "/api/auth/2fa/verify": ["post"],
      "/api/me": ["get"],
      "/api/api-keys": ["get", "post"],
      "/api/api-keys/{api_key}": ["get", "patch", "delete"],
      "/api/api-keys/{api_key}/regenerate": ["post"],
      "/api/teams": ["get", "post"],
      "/api/teams/{team}": ["get", "patch", "delete"],
      "/api/teams/{team}/members": ["post"],
      "/api/teams/{team}/members/{user}": ["delete"],
    };
    for (const [path, methods] of Object.entries(expected)) {
      for (const method of methods) expect(body.paths[path]?.[method]?.summary).toBeString();
    }
    const create = body.paths["/api/api-keys"].post.requestBody.content["application/json"].schema;
    expect(create.required).toEqual(["name", "permissions"]);
    expect(body.paths["/api/auth/login"].post.requestBody.content["application/json"].schema.required).toEqual(["email", "password"]);
  });
});
