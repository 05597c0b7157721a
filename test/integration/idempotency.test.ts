import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTenant, createUser, sessionFor } from "../fixtures";
import { createSharedNumber, randomNumber } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/** Issue 19 item 1: Idempotency-Key on the POSTs that create something (docs/api-notes.md "Idempotent requests"). */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
}, 60_000);
afterAll(async () => {
  await ctx.close();
});

const send = (token: string, body: unknown, key?: string) =>
  ctx.request("POST", "/api/messages", { token, body, headers: key === undefined ? {} : { "idempotency-key": key } });
const outboundCount = async (simId: number) =>
  (await ctx.sql<{ n: number }[]>`select count(*)::int as n from messages where hosted_sim_id = ${simId} and direction = 'outbound'`)[0]!.n;

describe("Idempotency-Key", () => {
  test("the same key and body answers the first answer again without sending twice; another body with the key is 422", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const body = { hosted_sim: sim.id, to: randomNumber(), text: "only once" };
    const first = await send(t.token, body, "order-42");
    expect(first.status).toBe(202);
    // The same request, its keys in another order: the same request.
    const again = await send(t.token, { text: body.text, to: body.to, hosted_sim: body.hosted_sim }, "order-42");
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(await outboundCount(sim.id)).toBe(1);
    const other = await send(t.token, { ...body, text: "something else" }, "order-42");
    expect(other.status).toBe(422);
    expectErrorShape(other.body, "idempotency_key_reused");
    expect(await outboundCount(sim.id)).toBe(1);
    // Without a key, each request is its own.
    await send(t.token, body);
    await send(t.token, body);
    expect(await outboundCount(sim.id)).toBe(3);
  });

  test("50 concurrent requests with one key send once and count one quota unit; the others replay it or answer 409 request_in_progress", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const body = { hosted_sim: sim.id, to: randomNumber(), text: "raced" };
    const answers = await Promise.all(Array.from({ length: 50 }, () => send(t.token, body, "race-1")));
    expect(await outboundCount(sim.id)).toBe(1);
    const usage = await ctx.request("GET", "/api/usage", { token: t.token });
    expect(usage.body.data.monthly_messages.used).toBe(1);
    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 202 || s === 409)).toBe(true);
    const ids = new Set(answers.filter((a) => a.status === 202).map((a) => a.body.data.id));
    expect(ids.size).toBe(1);
    for (const a of answers.filter((x) => x.status === 409)) {
      expectErrorShape(a.body, "request_in_progress");
      expect(a.headers.get("retry-after")).toBe("1");
    }
  });

  test("creates that show a secret once replay it to their caller (API key, webhook integration, device); the kept answer is sealed", async () => {
    const t = await createTenant(ctx.sql);
    const post = (path: string, body: unknown, key: string) => ctx.request("POST", path, { token: t.token, body, headers: { "idempotency-key": key } });
    /** The request twice under one key: the second answers the first's answer again, marked replayed. */
    const twice = async (path: string, body: unknown, key: string, status: number) => {
      const first = await post(path, body, key);
      expect(first.status).toBe(status);
      const again = await post(path, body, key);
      expect(again.status).toBe(status);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
      return first;
    };
    const first = await twice("/api/api-keys", { name: "CI", permissions: ["messages.read"] }, "key-1", 201);
    expect((await ctx.request("GET", "/api/api-keys", { token: t.token })).body.data).toHaveLength(1);
    // The replayed key works: it is the one key that was made.
    expect((await ctx.request("GET", "/api/usage", { token: first.body.plain_text_key })).status).toBe(200);

    const hook = await twice("/api/webhook-integrations", { name: "receiver", url: "https://hooks.example.test/in" }, "hook-1", 201);
    expect((await ctx.request("GET", "/api/webhook-integrations", { token: t.token })).body.data).toHaveLength(1);

    const deviceBody = { android_id: "a1b2c3d4e5f60718", sim_slots: [1], device_model: "Pixel 8", app_version: "1.4.2", device_name: "retried" };
    await twice("/api/byos/devices/register", deviceBody, "device-1", 201);
    // v2's register (a route of its own) takes the key as v1's does: a retry gets its codes again, not a 409.
    await twice("/api/v2/byos/devices/register", { ...deviceBody, android_id: "a1b2c3d4e5f60719" }, "device-2", 201);

    const kept = await ctx.sql<{ key: string; response: unknown; response_sealed: string }[]>`
      select key, response, response_sealed from idempotency_keys where organization_id = ${t.org.id} order by key`;
    expect(kept.map((k) => k.key)).toEqual(["device-1", "device-2", "hook-1", "key-1"]);
    for (const k of kept) {
      expect(k.response).toBeNull();
      expect(k.response_sealed).toStartWith("v1:");
    }
    const atRest = JSON.stringify(kept);
    expect(atRest).not.toContain(first.body.plain_text_key);
    expect(atRest).not.toContain(hook.body.data.secret);
  });

  test("keys belong to their caller: another user with the same key does their own work, and may do only what they may", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const colleague = await createUser(ctx.sql, { orgId: t.org.id, role: "member" });
    const colleagueToken = await sessionFor(ctx.sql, colleague.id);
    const body = { name: "QA" };
    const a = await ctx.request("POST", "/api/teams", { token: t.token, body, headers: { "idempotency-key": "k" } });
    expect(a.status).toBe(201);
    const b = await ctx.request("POST", "/api/teams", { token: colleagueToken, body: { name: "QA 2" }, headers: { "idempotency-key": "k" } });
    // The colleague (a member) may not create teams at all: the key changes nothing about that.
    expect(b.status).toBe(403);
    const msg = { hosted_sim: sim.id, to: randomNumber(), text: "from two people" };
    const mine = await send(t.token, msg, "m");
    const theirs = await send(colleagueToken, msg, "m");
    expect(mine.status).toBe(202);
    expect(theirs.status).toBe(202);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
  });

  test("an error answer is kept like a success; a malformed key is 422; a replay of a kept 4xx says so", async () => {
    const t = await createTenant(ctx.sql);
    const to = randomNumber();
    const missing = await send(t.token, { hosted_sim: 999_999_999, to, text: "x" }, "missing-number");
    expect(missing.status).toBe(404);
    const replayed = await send(t.token, { hosted_sim: 999_999_999, to, text: "x" }, "missing-number");
    expect(replayed.status).toBe(404);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expectErrorShape(replayed.body, "not_found");
    const reused = await send(t.token, { hosted_sim: 999_999_999, to, text: "y" }, "missing-number");
    expect(reused.status).toBe(422);
    expectErrorShape(reused.body, "idempotency_key_reused");
    const bad = await send(t.token, { hosted_sim: 1, to: randomNumber(), text: "x" }, "bad key with spaces");
    expect(bad.status).toBe(422);
    expect(bad.body.errors["Idempotency-Key"]).toBeDefined();
    // An answer sealed under a SECRETS_KEY that has since changed cannot be replayed: 409, never a 500 or the work again.
    await ctx.sql`update idempotency_keys set response_sealed = 'v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' where organization_id = ${t.org.id} and key = 'missing-number'`;
    const unreadable = await send(t.token, { hosted_sim: 999_999_999, to, text: "x" }, "missing-number");
    expect(unreadable.status).toBe(409);
    expectErrorShape(unreadable.body, "idempotency_answer_unreadable");
  });

  test("a refusal of the request by the route's own checks (422 validation_failed) is not kept: the corrected request goes through under the key", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const [r1, r2] = [randomNumber(), randomNumber()];
    // A recipient twice: refused by the send's own rules (after the schema, after the key is claimed).
    const twice = await send(t.token, { hosted_sim: sim.id, to: [r1, r2, r1], text: "dup" }, "fix-me");
    expect(twice.status).toBe(422);
    expectErrorShape(twice.body, "validation_failed");
    expect((await ctx.sql`select 1 from idempotency_keys where organization_id = ${t.org.id} and key = 'fix-me'`).length).toBe(0);
    const fixed = await send(t.token, { hosted_sim: sim.id, to: [r1, r2], text: "dup" }, "fix-me");
    expect(fixed.status).toBe(202);
    expect(await outboundCount(sim.id)).toBe(2);
    const again = await send(t.token, { hosted_sim: sim.id, to: [r1, r2], text: "dup" }, "fix-me");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await outboundCount(sim.id)).toBe(2);
  });

  test("409 number_locked is not kept: once the other organization's lock ends, the same send and lock under their keys go through", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: b.token, body: {} })).status).toBe(200);
    const body = { hosted_sim: sim.id, to: randomNumber(), text: "after the lock" };
    const lock = (key: string) => ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: {}, headers: { "idempotency-key": key } });
    for (const refused of [await send(a.token, body, "send-1"), await lock("lock-1")]) {
      expect(refused.status).toBe(409);
      expectErrorShape(refused.body, "number_locked");
    }
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: b.token })).status).toBe(200);
    const sent = await send(a.token, body, "send-1");
    expect([sent.status, sent.headers.get("idempotent-replayed")]).toEqual([202, null]);
    const locked = await lock("lock-1");
    expect([locked.status, locked.headers.get("idempotent-replayed")]).toEqual([200, null]);
    expect(locked.body.data.lock.organization_id).toBe(a.org.id);
  });

  test("an expired key (over 24 h) does the work again", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const body = { hosted_sim: sim.id, to: randomNumber(), text: "tomorrow again" };
    await send(t.token, body, "daily");
    await ctx.sql`update idempotency_keys set created_at = now() - interval '25 hours' where organization_id = ${t.org.id} and key = 'daily'`;
    const next = await send(t.token, body, "daily");
    expect(next.status).toBe(202);
    expect(next.headers.get("idempotent-replayed")).toBeNull();
    expect(await outboundCount(sim.id)).toBe(2);
  });
});
