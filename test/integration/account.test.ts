import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { passwordUserKey } from "../../server/auth/limits";
import { credentialsEpoch, deleteUserSessions } from "../../server/auth/store";
import { issueSession } from "../../server/auth/tokens";
import { createApiKey, createTenant, createUser, sessionFor, TEST_PASSWORD } from "../fixtures";
import { registerDevice } from "../fixtures-devices";
import { createSharedNumber, holdLocks, lockWaiters } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext, twoInstances } from "../helpers";

let ctx: TestContext;
// Password checks verify argon2id hashes: slow on a busy machine.
const slowTest = (name: string, fn: () => Promise<void>) => test(name, fn, 30_000);
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);
const limited: number[] = [];
afterEach(async () => {
  for (const id of limited.splice(0)) await ctx.services.limiter.reset(passwordUserKey(id));
});

const me = (token: string) => ctx.request("GET", "/api/me", { token });
const sessions = (token: string) => ctx.request("GET", "/api/auth/sessions", { token });
const changePassword = (token: string, body: unknown) => ctx.request("POST", "/api/auth/password", { token, body });
const login = (email: string, password: string) => ctx.request("POST", "/api/auth/login", { body: { email, password } });

describe("POST /api/auth/password", () => {
  slowTest("needs the current password; ends every other token of the user, keeps this one and no one else's", async () => {
    const t = await createTenant(ctx.sql);
    limited.push(t.user.id);
    const other = await sessionFor(ctx.sql, t.user.id);
    const stranger = await createTenant(ctx.sql);
    expect((await me(other)).status).toBe(200);

    const wrong = await changePassword(t.token, { current_password: "not it", new_password: "a new password" });
    expect(wrong.status).toBe(422);
    expectErrorShape(wrong.body, "validation_failed");
    expect(Object.keys(wrong.body.errors)).toEqual(["current_password"]);
    expect((await me(other)).status).toBe(200);

    const res = await changePassword(t.token, { current_password: TEST_PASSWORD, new_password: "a new password" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ signed_out: 1 });
    expect((await me(other)).status).toBe(401);
    expect((await me(t.token)).status).toBe(200);
    expect((await me(stranger.token)).status).toBe(200);
    expect((await login(t.user.email, TEST_PASSWORD)).status).toBe(401);
    expect((await login(t.user.email, "a new password")).status).toBe(200);
  });

  // PostgreSQL only: the issuance and the sign-out wait on the user's row (auth/store.ts inEpoch).
  test.skipIf(!process.env.DATABASE_URL)(
    "a sign-in whose password was checked while the user signs out everywhere else keeps no session, in either order",
    async () => {
      const t = await createTenant(ctx.sql);
      const epoch = (await credentialsEpoch(ctx.sql, t.user.id))!;
      const keep = (await ctx.sql<{ id: number }[]>`select id from sessions where user_id = ${t.user.id}`)[0]!.id;
      // The sign-out first: the issuance waits for it, then finds the epoch moved.
      let release = await holdLocks(ctx.sql, (tx) => deleteUserSessions(tx, t.user.id, { except: keep }));
      const issued = issueSession(ctx.sql, t.user.id, { ttlSeconds: 60, epoch });
      await lockWaiters(ctx.sql, 1);
      await release();
      expect(await issued).toBeUndefined();
      // The issuance first: the sign-out waits for it, then ends what it issued.
      const next = epoch + 1;
      let session: Awaited<ReturnType<typeof issueSession>>;
      release = await holdLocks(ctx.sql, async (tx) => (session = await issueSession(tx, t.user.id, { ttlSeconds: 60, epoch: next })));
      const signOut = ctx.sql.begin((tx) => deleteUserSessions(tx, t.user.id, { except: keep }));
      await lockWaiters(ctx.sql, 1);
      await release();
      expect(await signOut).toEqual({ sessionIds: [session!.id], grantIds: [] });
      expect((await ctx.sql`select id from sessions where user_id = ${t.user.id}`).map((r) => r.id)).toEqual([keep]);
    },
  );

  slowTest("bounded input: a short or huge new password is 422; an API key is refused before its body is read", async () => {
    const t = await createTenant(ctx.sql);
    const short = await changePassword(t.token, { current_password: TEST_PASSWORD, new_password: "short" });
    expect(short.status).toBe(422);
    expect(Object.keys(short.body.errors)).toEqual(["new_password"]);
    const huge = await changePassword(t.token, { current_password: TEST_PASSWORD, new_password: "x".repeat(1025) });
    expect(huge.status).toBe(422);
    const key = await createApiKey(ctx.sql, t.org.id, ["numbers.read"]);
    const byKey = await changePassword(key.key, { nonsense: true });
    expect(byKey.status).toBe(403);
    expectErrorShape(byKey.body, "api_key_not_allowed");
    expect((await changePassword("st_unknown", { nonsense: true })).status).toBe(401);
  });

  slowTest("wrong current passwords are limited per user like sign-ins: the 11th in 15 minutes is 429, the right one too", async () => {
    const t = await createTenant(ctx.sql);
    limited.push(t.user.id);
    for (let i = 0; i < 10; i++) expect((await changePassword(t.token, { current_password: `wrong ${i}`, new_password: "a new password" })).status).toBe(422);
    const over = await changePassword(t.token, { current_password: TEST_PASSWORD, new_password: "a new password" });
    expect(over.status).toBe(429);
    expectErrorShape(over.body, "rate_limited");
    expect(over.headers.get("retry-after")).toMatch(/^\d+$/);
  });
});

describe("the user's sessions", () => {
  test("listed with the current one marked; another user's are neither listed nor revocable", async () => {
    const t = await createTenant(ctx.sql);
    const second = await sessionFor(ctx.sql, t.user.id);
    const colleague = await createUser(ctx.sql, { orgId: t.org.id, role: "owner" });
    const colleagueToken = await sessionFor(ctx.sql, colleague.id);

    const list = await sessions(t.token);
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(2);
    expect(list.body.data.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    for (const s of list.body.data) expect(Object.keys(s).sort()).toEqual(["created_at", "current", "expires_at", "id", "kind", "last_used_at"]);

    const theirs = (await sessions(colleagueToken)).body.data;
    expect(theirs).toHaveLength(1);
    const refused = await ctx.request("DELETE", `/api/auth/sessions/${theirs[0].id}`, { token: t.token });
    expect(refused.status).toBe(404);
    expectErrorShape(refused.body, "not_found");
    expect((await me(colleagueToken)).status).toBe(200);

    const secondId = list.body.data.find((s: { current: boolean }) => !s.current).id;
    expect((await ctx.request("DELETE", `/api/auth/sessions/${secondId}`, { token: t.token })).status).toBe(204);
    expect((await me(second)).status).toBe(401);
    expect((await me(t.token)).status).toBe(200);
    expect((await ctx.request("DELETE", "/api/auth/sessions/abc", { token: t.token })).status).toBe(422);
  });

  test("revoke-others ends every other token of the user at once, not the caller's and not a colleague's", async () => {
    const t = await createTenant(ctx.sql);
    const others = [await sessionFor(ctx.sql, t.user.id), await sessionFor(ctx.sql, t.user.id)];
    const colleague = await createUser(ctx.sql, { orgId: t.org.id });
    const colleagueToken = await sessionFor(ctx.sql, colleague.id);
    const res = await ctx.request("POST", "/api/auth/sessions/revoke-others", { token: t.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ signed_out: 2 });
    for (const token of others) expect((await me(token)).status).toBe(401);
    expect((await me(t.token)).status).toBe(200);
    expect((await me(colleagueToken)).status).toBe(200);
    expect((await sessions(t.token)).body.data).toHaveLength(1);
  });

  test.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(
    "across two instances (Redis): tokens signed out on B answer 401 on A on the very next request",
    async () => {
      const { a, b, close } = await twoInstances();
      try {
        const t = await createTenant(a.sql);
        const other = await sessionFor(a.sql, t.user.id);
        // Cached on A (the cache serves it without reading the database again).
        expect((await a.request("GET", "/api/me", { token: other })).status).toBe(200);
        expect((await b.request("POST", "/api/auth/sessions/revoke-others", { token: t.token })).status).toBe(200);
        expect((await a.request("GET", "/api/me", { token: other })).status).toBe(401);
        expect((await a.request("GET", "/api/me", { token: t.token })).status).toBe(200);
      } finally {
        await close();
      }
    },
    30_000,
  );

  test("API keys are refused (403 api_key_not_allowed)", async () => {
    const t = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, t.org.id, ["numbers.read"]);
    const res = await sessions(key.key);
    expect(res.status).toBe(403);
    expectErrorShape(res.body, "api_key_not_allowed");
  });
});

describe("GET /api/usage", () => {
  test("devices and this month's messages against the plan, for the organization acted in only", async () => {
    const t = await createTenant(ctx.sql, { plan: "free" });
    const other = await createTenant(ctx.sql, { plan: "pro" });
    await registerDevice(ctx, t.token, [1]);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    // Four sends, one of them cancelled (its unit given back): three count.
    const sendAt = new Date(Date.now() + 3_600_000).toISOString();
    const sent = [];
    for (let i = 0; i < 4; i++)
      sent.push(
        (await ctx.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: sim.id, to: "+15550009999", text: "x", send_at: sendAt } })).body
          .data,
      );
    expect((await ctx.request("POST", `/api/messages/${sent[0].id}/cancel`, { token: t.token })).status).toBe(200);

    const res = await ctx.request("GET", "/api/usage", { token: t.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      organization_id: t.org.id,
      plan: "free",
      devices: { used: 1, limit: 2, remaining: 1 },
      monthly_messages: { used: 3, limit: 100, remaining: 97 },
    });
    expect(new Date(res.body.data.period.start).getTime()).toBeLessThanOrEqual(Date.now());
    expect(new Date(res.body.data.period.end).getTime()).toBeGreaterThan(Date.now());

    const theirs = await ctx.request("GET", "/api/usage", { token: other.token });
    expect(theirs.body.data).toMatchObject({ organization_id: other.org.id, plan: "pro", devices: { used: 0 }, monthly_messages: { used: 0 } });
    const foreign = await ctx.request("GET", "/api/usage", { token: t.token, headers: { "x-organization-id": String(other.org.id) } });
    expect(foreign.status).toBe(404);
    expectErrorShape(foreign.body, "not_found");

    const key = await createApiKey(ctx.sql, other.org.id, ["messages.read"]);
    expect((await ctx.request("GET", "/api/usage", { token: key.key })).body.data.organization_id).toBe(other.org.id);
  });
});
