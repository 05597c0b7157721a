import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { encodeCursor } from "../../server/events/cursor";
import { createTenant } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import { createHook, createNumber, createTeam, deliveriesMade, fastForwardRetries, logsOf, receiveSms, startReceiver, waitFor } from "./webhooks-helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await ctx?.close();
}, 60_000);

/** A tenant with a team, a number on that team, and an integration always-mapped to it. */
async function setup(hook: Record<string, unknown>, respond?: Parameters<typeof startReceiver>[0]) {
  const tenant = await createTenant(ctx.sql);
  const team = await createTeam(ctx.sql, tenant.org.id);
  const sim = await createNumber(ctx.sql, [{ orgId: tenant.org.id, teamId: team.id, alias: "front desk" }]);
  const receiver = startReceiver(respond);
  const { id, secret } = await createHook(ctx, tenant.token, { url: receiver.url, ...hook }, [{ teamId: team.id, mode: "always" }]);
  receiver.secrets.push(secret);
  return { ...tenant, team, sim, receiver, id, secret };
}

describe("webhook deliveries", () => {
  test("every delivery is a signed message.received that standardwebhooks verifies; custom headers ride along", async () => {
    const s = await setup({ headers: { "X-Custom": "yes", Authorization: "Bearer receiver-token" } });
    const stored = await receiveSms(ctx, s.sim.id, "your code is 1234");
    const [got] = await waitFor(() => s.receiver.received.length === 1 && s.receiver.received, 10_000, "delivery");
    expect(got!.verifiedWith).toBe(s.secret);
    expect(got!.headers["x-custom"]).toBe("yes");
    expect(got!.headers.authorization).toBe("Bearer receiver-token");
    expect(got!.headers["content-type"]).toBe("application/json");
    expect(got!.event).toMatchObject({ id: got!.headers["webhook-id"], type: "message.received" });
    expect(got!.event.created_at).toMatch(/Z$/);
    expect(got!.event.data).toMatchObject({
      id: stored.messageId,
      direction: "inbound",
      text: "your code is 1234",
      from: "+15550001111",
      hosted_sim: { id: s.sim.id, number: s.sim.number, alias: "front desk" },
      team: { id: s.team.id, name: s.team.name },
    });
    const logs = await waitFor(async () => {
      const l = await logsOf(ctx, s.token, s.id);
      return l.data.length === 1 && l;
    });
    expect(logs.data[0]).toMatchObject({
      webhook_integration_id: s.id,
      event_id: got!.event.id,
      event_type: "message.received",
      message_id: stored.messageId,
      attempt: 1,
      status: "succeeded",
      http_status: 200,
      response_body: "ok",
      error: null,
      next_retry_at: null,
    });
    s.receiver.stop();
  }, 30_000);

  test("a receiver answering a NUL: its record is kept (U+FFFD in its place), and deliveries of another organization after it go on, once each", async () => {
    const odd = await setup({}, () => new Response("ok\u0000"));
    const other = await setup({});
    await receiveSms(ctx, odd.sim.id, "to the odd receiver");
    await receiveSms(ctx, other.sim.id, "after it, elsewhere");
    const logs = await waitFor(
      async () => {
        const l = await logsOf(ctx, odd.token, odd.id);
        return l.data.length === 1 && l;
      },
      10_000,
      "the odd receiver's log record",
    );
    expect(logs.data[0]).toMatchObject({ status: "succeeded", http_status: 200, response_body: "ok\ufffd" });
    await waitFor(() => other.receiver.received.length === 1, 10_000, "the other organization's delivery");
    await receiveSms(ctx, other.sim.id, "and the next one");
    await waitFor(() => other.receiver.received.length === 2, 10_000, "its next delivery");
    expect(other.receiver.received.map((r) => r.event.data.text)).toEqual(["after it, elsewhere", "and the next one"]);
    odd.receiver.stop();
    other.receiver.stop();
  }, 30_000);

  test("after regenerate, deliveries verify only with the new secret", async () => {
    const s = await setup({});
    const regen = await ctx.request("POST", `/api/webhook-integrations/${s.id}/regenerate-secret`, { token: s.token });
    s.receiver.secrets.push(regen.body.data.secret);
    await receiveSms(ctx, s.sim.id);
    const [got] = await waitFor(() => s.receiver.received.length === 1 && s.receiver.received);
    expect(got!.verifiedWith).toBe(regen.body.data.secret);
    s.receiver.stop();
  }, 30_000);

  test("a 500 then 200 is retried after ~5 s under the same webhook-id, logged attempt by attempt", async () => {
    const s = await setup({ retry_count: 3 }, (n) => (n === 1 ? new Response("boom", { status: 500 }) : new Response("fine")));
    await receiveSms(ctx, s.sim.id);
    const first = await waitFor(async () => (await logsOf(ctx, s.token, s.id)).data[0]);
    expect(first).toMatchObject({ attempt: 1, status: "retrying", http_status: 500, response_body: "boom", error: "HTTP 500" });
    const wait = Date.parse(first.next_retry_at) - Date.parse(first.created_at);
    expect(wait).toBeGreaterThanOrEqual(3_900);
    expect(wait).toBeLessThanOrEqual(6_100);
    await fastForwardRetries(ctx, s.id);
    await waitFor(() => s.receiver.received.length === 2);
    const [a, b] = s.receiver.received;
    expect(b!.headers["webhook-id"]).toBe(a!.headers["webhook-id"]);
    expect(b!.body).toBe(a!.body);
    expect(b!.verifiedWith).toBe(s.secret);
    const logs = await waitFor(async () => {
      const l = await logsOf(ctx, s.token, s.id);
      return l.data.length === 2 && l;
    });
    expect(logs.data.map((l) => [l.attempt, l.status])).toEqual([
      [2, "succeeded"],
      [1, "retrying"],
    ]);
    const retrying = await logsOf(ctx, s.token, s.id, "?status=retrying");
    expect(retrying.data.map((l) => l.attempt)).toEqual([1]);
    const paged = await logsOf(ctx, s.token, s.id, "?per_page=1&page=2");
    expect(paged.data.map((l) => l.attempt)).toEqual([1]);
    expect(paged.meta).toMatchObject({ current_page: 2, per_page: 1, total: 2, last_page: 2 });
    expect((await ctx.request("GET", `/api/webhook-integrations/${s.id}/logs?status=lost`, { token: s.token })).status).toBe(422);
    s.receiver.stop();
  }, 30_000);

  test("Retry-After is honoured instead of the backoff", async () => {
    const s = await setup({ retry_count: 2 }, (n) => (n === 1 ? new Response("busy", { status: 503, headers: { "retry-after": "1" } }) : new Response("ok")));
    await receiveSms(ctx, s.sim.id);
    await waitFor(() => s.receiver.received.length === 2, 10_000, "retry after Retry-After");
    const gap = s.receiver.received[1]!.at - s.receiver.received[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(gap).toBeLessThan(4_000);
    s.receiver.stop();
  }, 30_000);

  test("timeout_seconds ends a slow attempt; retry_count 0 means exactly one attempt", async () => {
    const s = await setup({ timeout_seconds: 1, retry_count: 0 }, async () => {
      await Bun.sleep(3_000);
      return new Response("late");
    });
    await receiveSms(ctx, s.sim.id);
    const log = await waitFor(async () => (await logsOf(ctx, s.token, s.id)).data[0], 10_000, "timeout log");
    expect(log).toMatchObject({ attempt: 1, status: "failed", http_status: null, error: "timed out after 1000 ms" });
    expect(log.response_time_ms).toBeGreaterThanOrEqual(950);
    expect(log.response_time_ms).toBeLessThan(2_500);
    const [d] = await ctx.sql<{ id: number; status: string; attempts: number }[]>`
      select id, status, attempts from webhook_deliveries where webhook_integration_id = ${s.id}`;
    expect(d).toMatchObject({ status: "failed", attempts: 1 });
    // Nothing is left to run: no job waits for a second attempt.
    await waitFor(async () => (await ctx.sql`select 1 from jobs where queue = 'webhook.delivery' and payload->>'delivery_id' = ${String(d!.id)}`).length === 0);
    expect(s.receiver.received).toHaveLength(1);
    s.receiver.stop();
  }, 30_000);

  test("a redirect is a failure and is not followed; only the first 4 KiB of an answer are kept", async () => {
    const s = await setup({ retry_count: 0 }, (n, req) =>
      new URL(req.url).pathname === "/hook" && n === 1
        ? new Response(null, { status: 302, headers: { location: "/elsewhere" } })
        : new Response("x".repeat(10_000), { status: 400 }),
    );
    await receiveSms(ctx, s.sim.id);
    const log = await waitFor(async () => (await logsOf(ctx, s.token, s.id)).data[0]);
    expect(log).toMatchObject({ status: "failed", http_status: 302 });
    expect(log.error).toContain("redirect");
    expect(s.receiver.received.map((r) => r.path)).toEqual(["/hook"]);
    await receiveSms(ctx, s.sim.id);
    const second = await waitFor(async () => {
      const l = await logsOf(ctx, s.token, s.id);
      return l.data.length === 2 && l.data[0];
    });
    expect(second.http_status).toBe(400);
    expect(second.response_body).toHaveLength(4096);
    s.receiver.stop();
  }, 30_000);

  test("a first attempt its instance died before recording is made by the next owner of the consumer, once the dead one's lease lapsed, under the event's id", async () => {
    const s = await setup({});
    await ctx.services.webhooks.stop();
    let leaseSet = 0;
    let eventId = "";
    try {
      const stored = await receiveSms(ctx, s.sim.id);
      // The fan-out (still running) appends the event; a dead instance owns the consumer: it had
      // read the event, its attempt was never recorded, its lease runs for two more seconds.
      const event = await waitFor(
        async () =>
          (
            await ctx.sql<{ id: number; txid: string }[]>`
              select id, txid::text as txid from events where type = 'message.received' and (payload->'message'->>'id')::bigint = ${stored.messageId}`
          )[0],
        10_000,
        "the event appended",
      );
      eventId = encodeCursor(event);
      await ctx.sql`update event_consumers set owner = 'dead-instance', owner_until = now() + interval '2 seconds' where name = 'webhooks'`;
      leaseSet = performance.now();
    } finally {
      await ctx.services.webhooks.start();
    }
    const [got] = await waitFor(() => s.receiver.received.length > 0 && s.receiver.received, 15_000, "the delivery by the next owner");
    expect(got!.at - leaseSet).toBeGreaterThan(1_000);
    expect(got!.headers["webhook-id"]).toBe(eventId);
    expect(got!.verifiedWith).toBe(s.secret);
    await deliveriesMade(ctx);
    const [owner] = await ctx.sql<{ owner: string }[]>`select owner from event_consumers where name = 'webhooks'`;
    expect(owner!.owner).toBe(ctx.services.jobs.workerId);
    s.receiver.stop();
  }, 30_000);
  test("a secret that cannot be opened (SECRETS_KEY changed) is a logged failure, not a job looping forever", async () => {
    const s = await setup({ retry_count: 0 });
    await ctx.sql`update webhook_integrations set secret_sealed = ${`v1:${Buffer.alloc(48, 1).toString("base64")}`} where id = ${s.id}`;
    await receiveSms(ctx, s.sim.id);
    const log = await waitFor(async () => (await logsOf(ctx, s.token, s.id)).data[0]);
    expect(log).toMatchObject({ status: "failed", http_status: null });
    expect(log.error).toContain("SECRETS_KEY");
    const test = await ctx.request("POST", `/api/webhook-integrations/${s.id}/test`, { token: s.token });
    expect(test.status).toBe(200);
    expect(test.body).toMatchObject({ success: false, http_status: 0 });
    expect(s.receiver.received).toHaveLength(0);
    // Regenerating makes it work again.
    const regen = await ctx.request("POST", `/api/webhook-integrations/${s.id}/regenerate-secret`, { token: s.token });
    s.receiver.secrets.push(regen.body.data.secret);
    expect((await ctx.request("POST", `/api/webhook-integrations/${s.id}/test`, { token: s.token })).body.success).toBe(true);
    expect(s.receiver.received[0]!.verifiedWith).toBe(regen.body.data.secret);
    s.receiver.stop();
  }, 30_000);
});

describe("redelivery", () => {
  test("refused with 409 invalid_state on an inactive integration, as a replay is; active again, it is queued", async () => {
    const s = await setup({});
    await receiveSms(ctx, s.sim.id, "once");
    const log = await waitFor(async () => (await logsOf(ctx, s.token, s.id)).data[0], 10_000, "the log record");
    const off = await ctx.request("PATCH", `/api/webhook-integrations/${s.id}`, {
      token: s.token,
      body: { name: "off", url: s.receiver.url, is_active: false },
    });
    expect(off.status).toBe(200);
    const refused = await ctx.request("POST", `/api/webhook-integrations/${s.id}/logs/${log.id}/redeliver`, { token: s.token });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("invalid_state");
    await ctx.request("PATCH", `/api/webhook-integrations/${s.id}`, { token: s.token, body: { name: "on", url: s.receiver.url, is_active: true } });
    expect((await ctx.request("POST", `/api/webhook-integrations/${s.id}/logs/${log.id}/redeliver`, { token: s.token })).status).toBe(202);
    s.receiver.stop();
  }, 30_000);
});

describe("test event", () => {
  test("an integration deleted while its test is on the way: the test still answers its outcome (not a 500), nothing is logged", async () => {
    let answered!: () => void;
    const reached = new Promise<void>((resolve) => (answered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const s = await setup({}, async () => {
      answered();
      await released;
      return new Response("late");
    });
    const test = ctx.request("POST", `/api/webhook-integrations/${s.id}/test`, { token: s.token });
    await reached;
    expect((await ctx.request("DELETE", `/api/webhook-integrations/${s.id}`, { token: s.token })).status).toBe(200);
    release();
    const res = await test;
    expect([res.status, res.body.success]).toEqual([200, true]);
    const [logs] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from webhook_delivery_logs where webhook_integration_id = ${s.id}`;
    expect(logs!.n).toBe(0);
    s.receiver.stop();
  }, 30_000);

  test("sends a signed webhook.test synchronously and reports the outcome", async () => {
    const s = await setup({}, () => new Response("pong", { status: 202 }));
    const res = await ctx.request("POST", `/api/webhook-integrations/${s.id}/test`, { token: s.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, http_status: 202, response_body: "pong", error: null });
    expect(res.body.response_time_ms).toBeGreaterThanOrEqual(0);
    expect(s.receiver.received).toHaveLength(1);
    expect(s.receiver.received[0]!.verifiedWith).toBe(s.secret);
    expect(s.receiver.received[0]!.event).toMatchObject({ type: "webhook.test", data: { webhook_integration: { id: s.id } } });
    const team = await ctx.request("POST", `/api/teams/${s.team.id}/webhooks/${s.id}/test`, { token: s.token });
    expect(team.body.success).toBe(true);
    const logs = await logsOf(ctx, s.token, s.id);
    expect(logs.data[0]).toMatchObject({ event_type: "webhook.test", status: "succeeded", http_status: 202 });
    s.receiver.stop();
  }, 30_000);

  test("a target that is down answers success false with a reason, never a 500", async () => {
    const s = await setup({ timeout_seconds: 2 });
    s.receiver.stop();
    const res = await ctx.request("POST", `/api/webhook-integrations/${s.id}/test`, { token: s.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: false, http_status: 0, response_body: "" });
    expect(res.body.error).toContain("connection failed");
    const slow = await setup({ timeout_seconds: 1 }, async () => {
      await Bun.sleep(2_500);
      return new Response("late");
    });
    const timed = await ctx.request("POST", `/api/webhook-integrations/${slow.id}/test`, { token: slow.token });
    expect(timed.body).toMatchObject({ success: false, http_status: 0, error: "timed out after 1000 ms" });
    slow.receiver.stop();
  }, 30_000);
});
