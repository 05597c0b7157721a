import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { sendThroughProvider } from "../../server/messages/outbound-jobs";
import { moveStatuses } from "../../server/messages/outbound-store";
import type { ProviderClient } from "../../server/messages/provider-client";
import type { Delivery } from "../../server/realtime/hub";
import { createApiKey, createOrg, createTenant } from "../fixtures";
import { logRows, watchRealtime } from "../fixtures-events";
import { createByosNumber, createSharedNumber, eventually, holdLocks, lockWaiters, randomNumber, receiveSms, unpaced, useQuota } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/**
 * Scheduled, expiring, cancellable and bulk sends (issue 19 items 2 and 3), with the job queue
 * running and a local provider API that records what it is handed. Time is driven through the
 * jobs' run_at (a send_at a second ahead, or a job row moved), never by sleeping.
 */
type Sent = { from: string; to: string; body: string; at: number };
const received: Sent[] = [];
/** Answers per recipient, in order (the last repeats); 201 when none is set. */
const script = new Map<string, number[]>();
const provider = Bun.serve({
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as Sent;
    received.push({ ...body, at: Date.now() });
    const answers = script.get(body.to) ?? [201];
    const status = answers.length > 1 ? answers.shift()! : answers[0]!;
    if (status === 201) return Response.json({ sid: `SM${crypto.randomUUID().replaceAll("-", "")}`, status: "queued" }, { status });
    return Response.json({ message: `scripted ${status}` }, { status });
  },
});

// Scheduled sends wait a second or two of real time; the embedded database is slower still.
setDefaultTimeout(30_000);

let ctx: TestContext;
let events: Delivery[] = [];
beforeAll(async () => {
  ctx = await createTestContext({
    PROVIDER_API_URL: `http://127.0.0.1:${provider.port}`,
    PROVIDER_AUTH_TOKEN: "schedule-test-token",
    OUTBOUND_DEVICE_TIMEOUT_SECONDS: "1",
    OUTBOUND_PROVIDER_RETRY_SECONDS: "0.05",
  });
  events = watchRealtime(ctx.services);
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await ctx.close();
  provider.stop(true);
});

const send = (token: string, body: unknown) => ctx.request("POST", "/api/messages", { token, body });
const cancel = (token: string, id: number) => ctx.request("POST", `/api/messages/${id}/cancel`, { token });
const show = async (token: string, id: number) => (await ctx.request("GET", `/api/messages/${id}`, { token })).body.data;
const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
const statusesOf = (id: number) =>
  events
    .filter((e) => e.event === "message.status_changed" && e.channel.startsWith("private-organization.") && (e.data as any).message.id === id)
    .map((e) => (e.data as any).message.status);
/** The event log's status events of a message, oldest first (`message.queued`, `message.expired`, ...). */
const loggedOf = async (organizationId: number, id: number) =>
  (await logRows(ctx.services, [organizationId])).filter((r) => r.type.startsWith("message.") && (r.payload as any).message?.id === id).map((r) => r.type);
const handed = (to: string) => received.filter((r) => r.to === to);

async function settled(token: string, id: number, status: string, ms = 10_000) {
  return eventually(
    async () => {
      const m = await show(token, id);
      return m.status === status && m;
    },
    ms,
    `message ${id} ${status}`,
  );
}

async function used(orgId: number) {
  const [row] = await ctx.sql<{ n: number }[]>`
    select count(*)::int as n from messages where organization_id = ${orgId} and direction = 'outbound' and status not in ('cancelled', 'expired')`;
  return row!.n;
}

const jobOf = async (messageId: number, queue: string) =>
  (await ctx.sql<{ id: number; run_at: Date }[]>`select id, run_at from jobs where queue = ${queue} and payload->>'message_id' = ${String(messageId)}`)[0];

describe("scheduled sends (send_at)", () => {
  test("a provider send goes out at send_at, not before: scheduled → queued → sending → sent", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    const sendAt = ahead(1500);
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "later", send_at: sendAt });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ status: "scheduled", send_at: sendAt, expires_at: null, batch_id: null });
    const job = await jobOf(res.body.data.id, "message.outbound.dispatch");
    expect(job!.run_at.toISOString()).toBe(sendAt);
    const sent = await settled(t.token, res.body.data.id, "sent");
    expect(handed(to)).toHaveLength(1);
    expect(handed(to)[0]!.at).toBeGreaterThanOrEqual(Date.parse(sendAt));
    expect(Date.parse(sent.status_updated_at)).toBeGreaterThanOrEqual(Date.parse(sendAt));
    await eventually(() => statusesOf(res.body.data.id).length >= 4);
    expect(statusesOf(res.body.data.id)).toEqual(["scheduled", "queued", "sending", "sent"]);
    expect(await loggedOf(t.org.id, res.body.data.id)).toEqual(["message.scheduled", "message.queued", "message.sending", "message.sent"]);
  }, 20_000);

  test("a scheduled send survives a restart: its job is a row, and another instance's queue sends it", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "durable", send_at: ahead(3_600_000) });
    const id = res.body.data.id;
    await ctx.services.jobs.stop();
    try {
      await ctx.sql`update jobs set run_at = now() where queue = 'message.outbound.dispatch' and payload->>'message_id' = ${String(id)}`;
      // Stopped: nothing sends it.
      expect((await show(t.token, id)).status).toBe("scheduled");
      expect(handed(to)).toHaveLength(0);
    } finally {
      ctx.services.jobs.start();
    }
    await settled(t.token, id, "sent");
    expect(handed(to)).toHaveLength(1);
  });

  test("a BYOS send gets message.send at send_at only", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    await unpaced(ctx.sql, t.org.id);
    const res = await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770101", text: "phone later", send_at: ahead(800) });
    const id = res.body.data.id;
    expect(res.body.data.status).toBe("scheduled");
    const order = () => events.find((e) => e.event === "message.send" && (e.data as any).message.id === id);
    expect(order()).toBeUndefined();
    await eventually(order);
    expect((await show(t.token, id)).status).toBe("queued");
    const sent = await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, { token: t.token, body: { status: "sent" } });
    expect(sent.body.data.status).toBe("sent");
  });

  test("send_at in the past or absent sends at once; a send_at more than 30 days ahead is 422", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const past = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "now", send_at: "2020-01-01T00:00:00Z" });
    expect(past.body.data).toMatchObject({ status: "queued", send_at: null });
    const far = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "x", send_at: ahead(31 * 86_400_000) });
    expect(far.status).toBe(422);
    expectErrorShape(far.body, "validation_failed");
    expect(far.body.errors.send_at[0]).toContain("30 days");
    const ok = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "x", send_at: ahead(29 * 86_400_000) });
    expect(ok.body.data.status).toBe("scheduled");
    const bad = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "x", send_at: "tomorrow" });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors)).toEqual(["send_at"]);
  });
});

describe("expiring sends (expires_at)", () => {
  test("expires_at must be after send_at (or after now)", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const sendAt = ahead(60_000);
    for (const body of [{ send_at: sendAt, expires_at: sendAt }, { send_at: sendAt, expires_at: ahead(30_000) }, { expires_at: ahead(-1000) }]) {
      const res = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "x", ...body });
      expect(res.status).toBe(422);
      expectErrorShape(res.body, "validation_failed");
      expect(Object.keys(res.body.errors)).toEqual(["expires_at"]);
    }
  });

  test("a scheduled send whose dispatch comes after expires_at ends expired, never handed to the provider; its unit comes back", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "too late", send_at: ahead(3_600_000), expires_at: ahead(7_200_000) });
    const id = res.body.data.id;
    expect(await used(t.org.id)).toBe(1);
    // The instance was down past both times: the job runs now, after expires_at.
    await ctx.sql`update messages set send_at = now() - interval '2 hours', expires_at = now() - interval '1 hour' where id = ${id}`;
    await ctx.sql`update jobs set run_at = now() where queue = 'message.outbound.dispatch' and payload->>'message_id' = ${String(id)}`;
    ctx.services.jobs.wake();
    const expired = await settled(t.token, id, "expired");
    expect(expired.error).toContain("expired");
    expect(handed(to)).toHaveLength(0);
    expect(await used(t.org.id)).toBe(0);
    await eventually(() => statusesOf(id).includes("expired"));
    expect(await loggedOf(t.org.id, id)).toEqual(["message.scheduled", "message.expired"]);
  });

  test("a provider that keeps refusing with 5xx: the send expires instead of retrying past expires_at", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    script.set(to, [503]);
    // Backoff 50 ms doubling: the attempt whose next retry would come within 0.5 s of expires_at ends it.
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "flaky", expires_at: ahead(1500) });
    const expired = await settled(t.token, res.body.data.id, "expired");
    expect(expired.error).toContain("expired before the provider accepted it");
    expect(handed(to).length).toBeGreaterThan(0);
    expect(handed(to).length).toBeLessThan(6);
    expect(handed(to).every((r) => r.at < Date.parse(res.body.data.expires_at))).toBe(true);
  });

  test("a provider that took the request and never answered (connection lost) as expires_at comes: failed 'may have been sent', its unit kept, not expired", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    // Scheduled an hour ahead, so the running queue leaves it alone; then due now and expiring in 1 s.
    const res = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "unknown outcome", send_at: ahead(3_600_000) });
    const id = res.body.data.id as number;
    await ctx.sql`update messages set status = 'queued', send_at = null, expires_at = now() + interval '1 second' where id = ${id}`;
    const silent: ProviderClient = { send: async () => ({ kind: "retry", error: "provider unreachable: connection failed", unknown: true }) };
    const job = { id: 0, queue: "message.outbound.provider", payload: { message_id: id }, attempts: 1, max_attempts: 6 };
    await sendThroughProvider({ ...ctx.services, clock: undefined }, silent, job, () => 5_000);
    const ended = await show(t.token, id);
    expect(ended).toMatchObject({ status: "failed", error: expect.stringContaining("it may have been sent") });
    expect(await used(t.org.id)).toBe(1);
    // A 5xx is a known refusal: that one still expires, its unit given back.
    const refused = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "refused", send_at: ahead(3_600_000) });
    await ctx.sql`update messages set status = 'queued', send_at = null, expires_at = now() + interval '1 second' where id = ${refused.body.data.id}`;
    const busy: ProviderClient = { send: async () => ({ kind: "retry", error: "provider answered 503" }) };
    await sendThroughProvider({ ...ctx.services, clock: undefined }, busy, { ...job, payload: { message_id: refused.body.data.id } }, () => 5_000);
    expect((await show(t.token, refused.body.data.id)).status).toBe("expired");
    expect(await used(t.org.id)).toBe(1);
  });

  test("a retry that runs after expires_at (a backlog, a restart): 'may have been sent' after an unanswered call, expired after a 503 or none", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const job = (id: number, attempts: number) => ({ id: 0, queue: "message.outbound.provider", payload: { message_id: id }, attempts, max_attempts: 6 });
    const services = { ...ctx.services, clock: undefined };
    /** A send whose first call got `first`, its retry running after expires_at; its status then. */
    async function lateRetry(first: ProviderClient["send"]) {
      const res = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "late retry", send_at: ahead(3_600_000) });
      const id = res.body.data.id as number;
      await ctx.sql`update messages set status = 'queued', send_at = null, expires_at = now() + interval '1 hour' where id = ${id}`;
      const retried = await sendThroughProvider(services, { send: first }, job(id, 1), () => 5_000).catch((e) => e);
      expect(retried).toBeInstanceOf(Error);
      await ctx.sql`update messages set expires_at = now() - interval '1 second' where id = ${id}`;
      const never: ProviderClient = { send: async () => Promise.reject(new Error("no call may be made after expires_at")) };
      await sendThroughProvider(services, never, job(id, 2), () => 5_000);
      return show(t.token, id);
    }
    const unanswered = await lateRetry(async () => ({ kind: "retry", error: "provider unreachable: timed out", unknown: true }));
    expect(unanswered).toMatchObject({ status: "failed", error: expect.stringContaining("it may have been sent") });
    expect(await used(t.org.id)).toBe(1);
    // The server stopped during the call (the job's lease ran out): no answer either.
    const cut = await lateRetry(async () => Promise.reject(new Error("the process ended mid-call")));
    expect(cut).toMatchObject({ status: "failed", error: expect.stringContaining("it may have been sent") });
    expect(await used(t.org.id)).toBe(2);
    const declined = await lateRetry(async () => ({ kind: "retry", error: "provider answered 503" }));
    expect(declined).toMatchObject({ status: "expired", error: "It expired before the provider accepted it." });
    expect(await used(t.org.id)).toBe(2);
  });

  test("an unanswered call, then a 503 on the retry as expires_at comes: failed 'may have been sent', unit kept (the 503 answers for its own call only)", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const services = { ...ctx.services, clock: undefined };
    const job = (id: number, attempts: number) => ({ id: 0, queue: "message.outbound.provider", payload: { message_id: id }, attempts, max_attempts: 6 });
    const res = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "timed out, then busy", send_at: ahead(3_600_000) });
    const id = res.body.data.id as number;
    await ctx.sql`update messages set status = 'queued', send_at = null, expires_at = now() + interval '1 hour' where id = ${id}`;
    const silent: ProviderClient = { send: async () => ({ kind: "retry", error: "provider unreachable: timed out", unknown: true }) };
    expect(await sendThroughProvider(services, silent, job(id, 1), () => 5_000).catch((e) => e)).toBeInstanceOf(Error);
    // The retry is declined with a wait past expires_at: the send ends now, and the first call may be at the provider.
    await ctx.sql`update messages set expires_at = now() + interval '2 seconds' where id = ${id}`;
    const busy: ProviderClient = { send: async () => ({ kind: "retry", error: "provider answered 503", retryAfterMs: 60_000 }) };
    await sendThroughProvider(services, busy, job(id, 2), () => 5_000);
    expect(await show(t.token, id)).toMatchObject({ status: "failed", error: expect.stringContaining("it may have been sent") });
    expect(await used(t.org.id)).toBe(1);
  });

  test("BYOS: with expires_at the device timeout is the expiry (expired, not failed); a late report is refused", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    await unpaced(ctx.sql, t.org.id);
    const res = await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770102", text: "phone off", expires_at: ahead(1500) });
    const id = res.body.data.id;
    const job = await jobOf(id, "message.outbound.device-timeout");
    expect(job!.run_at.toISOString()).toBe(res.body.data.expires_at);
    const expired = await settled(t.token, id, "expired");
    expect(expired.error).toContain("before it expired");
    expect(await used(t.org.id)).toBe(0);
    const late = await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, { token: t.token, body: { status: "sent" } });
    expect(late.status).toBe(409);
    // Without expires_at: today's timeout, failed.
    const plain = await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770103", text: "x" });
    expect((await settled(t.token, plain.body.data.id, "failed")).error).toContain("within 1 seconds");
  });
});

describe("a bulk send whose phone never comes back", () => {
  test("100 BYOS sends reach expires_at together: all expired (one event each, units given back); another organization's send in the same batch of jobs too", async () => {
    const t = await createTenant(ctx.sql);
    const other = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: false });
    const otherByos = await createByosNumber(ctx.sql, other.org.id, { online: false });
    const expiresAt = ahead(2000);
    const recipients = Array.from({ length: 100 }, () => randomNumber());
    const bulk = await send(t.token, { hosted_sim: byos.hostedSimId, to: recipients, text: "nobody home", expires_at: expiresAt });
    expect(bulk.status).toBe(202);
    const single = await send(other.token, { hosted_sim: otherByos.hostedSimId, to: randomNumber(), text: "x", expires_at: expiresAt });
    const ids: number[] = [...bulk.body.data.messages.map((m: { id: number }) => m.id), single.body.data.id];
    expect(await used(t.org.id)).toBe(100);
    await eventually(
      async () => {
        const [r] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from messages where id = any(${ids}::bigint[]) and status = 'expired'`;
        return r!.n === 101;
      },
      20_000,
      "the 101 sends expired",
    );
    const [row] = await ctx.sql<{ errors: string[] }[]>`select array_agg(distinct error) as errors from messages where id = any(${ids}::bigint[])`;
    expect(row!.errors).toEqual(["No device picked up the message before it expired."]);
    expect(await used(t.org.id)).toBe(0);
    expect(await used(other.org.id)).toBe(0);
    expect((await ctx.request("GET", "/api/usage", { token: t.token })).body.data.monthly_messages.used).toBe(0);
    expect((await ctx.request("GET", "/api/usage", { token: other.token })).body.data.monthly_messages.used).toBe(0);
    // Committed with the statuses, the events are readable once no older transaction is in flight
    // (the log's high-water mark): polled for, not read once.
    const expired = await eventually(
      async () => {
        const rows = (await logRows(ctx.services, [t.org.id, other.org.id], "message.expired")).filter((r) => ids.includes((r.payload as any).message?.id));
        return rows.length >= 101 && rows;
      },
      5000,
      "the 101 message.expired events readable",
    );
    expect(expired).toHaveLength(101);
    expect(new Set(expired.map((r) => (r.payload as any).message.id)).size).toBe(101);
  });
});

// The embedded database runs one session at a time: a held lock cannot be watched there.
test.skipIf(!process.env.DATABASE_URL)(
  "units given back to several organizations lock their monthly rows in key order, so two such batches never deadlock",
  async () => {
    const low = await createTenant(ctx.sql);
    const high = await createTenant(ctx.sql);
    expect(low.org.id).toBeLessThan(high.org.id);
    const sim = await createSharedNumber(ctx.sql, [low.org.id, high.org.id]);
    // The higher organization's month row first on disk, and its send first in the batch.
    const [{ month }] = (await ctx.sql`select date_trunc('month', now() at time zone 'UTC')::date::text as month`) as unknown as [{ month: string }];
    for (const org of [high.org.id, low.org.id]) {
      await ctx.sql`insert into outbound_usage as u (organization_id, month, used) values (${org}, ${month}::date, 5)
        on conflict (organization_id, month) do update set used = u.used + 5`;
    }
    const ids: number[] = [];
    for (const org of [high.org.id, low.org.id]) {
      const [m] = await ctx.sql<{ id: number }[]>`
        insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source, organization_id)
        values (${sim.id}, ${sim.number}, 'outbound', ${sim.number}, ${randomNumber()}, 'late', 'scheduled', 'api', ${org}) returning id`;
      ids.push(m!.id);
    }
    const usage = async () =>
      (
        await ctx.sql<{ organization_id: number; used: number }[]>`
        select organization_id, used from outbound_usage where organization_id = any(${[low.org.id, high.org.id]}::bigint[]) order by organization_id`
      ).map((r) => r.used);
    const before = await usage();
    // The lower organization's row held elsewhere: the batch must stop there, before the higher one's.
    const release = await holdLocks(
      ctx.sql,
      (tx) => tx`select 1 from outbound_usage where organization_id = ${low.org.id} and month = ${month}::date for update`,
    );
    const moving = moveStatuses(ctx.sql, ids, "expired", ["scheduled"], { error: "late" });
    await lockWaiters(ctx.sql, 1);
    const higherFree = await ctx.sql
      .begin(async (tx) => (await tx`select 1 from outbound_usage where organization_id = ${high.org.id} and month = ${month}::date for update nowait`).length)
      .catch((e: { code?: string }) => e.code);
    await release();
    expect(higherFree).toBe(1);
    expect((await moving).sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
    expect(await usage()).toEqual(before.map((n) => n - 1));
  },
);

describe("cancelling (POST /api/messages/{id}/cancel)", () => {
  test("a scheduled send cancelled before send_at never goes out; its unit is given back; again answers 200", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "never mind", send_at: ahead(1000) });
    const id = res.body.data.id;
    expect(await used(t.org.id)).toBe(1);
    const other = await createTenant(ctx.sql);
    expect((await cancel(other.token, id)).status).toBe(404);
    const done = await cancel(t.token, id);
    expect(done.status).toBe(200);
    expect(done.body.data.status).toBe("cancelled");
    expect(await used(t.org.id)).toBe(0);
    expect((await cancel(t.token, id)).status).toBe(200);
    // Its dispatch job runs and leaves it alone.
    await ctx.sql`update jobs set run_at = now() where queue = 'message.outbound.dispatch' and payload->>'message_id' = ${String(id)}`;
    ctx.services.jobs.wake();
    await eventually(async () => !(await jobOf(id, "message.outbound.dispatch")));
    expect((await show(t.token, id)).status).toBe("cancelled");
    expect(handed(to)).toHaveLength(0);
    await eventually(() => statusesOf(id).includes("cancelled"));
    expect(await loggedOf(t.org.id, id)).toEqual(["message.scheduled", "message.cancelled"]);
  });

  test("a sent message cannot be cancelled (409 invalid_state); a queued BYOS send can, and the device is told", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const res = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "gone" });
    await settled(t.token, res.body.data.id, "sent");
    const refused = await cancel(t.token, res.body.data.id);
    expect(refused.status).toBe(409);
    expectErrorShape(refused.body, "invalid_state");
    expect(await used(t.org.id)).toBe(1);

    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    await unpaced(ctx.sql, t.org.id);
    const queued = await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770104", text: "stop" });
    const id = queued.body.data.id;
    // Cancelled once the pacer has handed it to the phone (its 1 s pick-up timeout moved out of the way): the phone is told.
    await eventually(async () => (await ctx.sql`select 1 from messages where id = ${id} and dispatched_at is not null`).length > 0);
    await ctx.sql`update jobs set run_at = now() + interval '1 hour' where queue = 'message.outbound.device-timeout' and payload->>'message_id' = ${String(id)}`;
    expect((await cancel(t.token, id)).body.data.status).toBe("cancelled");
    await eventually(() =>
      events.find((e) => e.event === "message.cancelled" && e.channel === `private-device.${byos.deviceId}` && (e.data as any).message.id === id),
    );
    expect(await loggedOf(t.org.id, id)).toEqual(["message.queued", "message.send", "message.cancelled", "message.send_cancelled"]);
    const late = await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, { token: t.token, body: { status: "sending" } });
    expect(late.status).toBe(409);
    // A device that reported `sending` has the message: too late to cancel.
    const handedOver = await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770105", text: "on its way" });
    await eventually(() => events.find((e) => e.event === "message.send" && (e.data as any).message.id === handedOver.body.data.id), 30_000);
    await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${handedOver.body.data.id}/status`, { token: t.token, body: { status: "sending" } });
    expect((await cancel(t.token, handedOver.body.data.id)).status).toBe(409);
  });

  test("an unknown id is 404, an inbound message 409; API keys may not cancel (403)", async () => {
    const t = await createTenant(ctx.sql);
    expect((await cancel(t.token, 999_999_999)).status).toBe(404);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const inbound = await receiveSms(ctx.sql, sim.id);
    const refused = await cancel(t.token, inbound.messageId);
    expect(refused.status).toBe(409);
    expectErrorShape(refused.body, "invalid_state");
    const res = await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "x", send_at: ahead(3_600_000) });
    const key = await createApiKey(ctx.sql, t.org.id, ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"]);
    const byKey = await cancel(key.key, res.body.data.id);
    expect(byKey.status).toBe(403);
    expectErrorShape(byKey.body, "permission_denied");
    // A key with messages.read may follow a batch.
    const batch = await send(t.token, { hosted_sim: sim.id, to: [randomNumber()], text: "x", send_at: ahead(3_600_000) });
    const summary = await ctx.request("GET", `/api/messages/batches/${batch.body.data.batch_id}`, { token: key.key });
    expect(summary.body.data).toMatchObject({ total: 1, counts: { scheduled: 1 } });
  });
});

describe("bulk sends (to as an array)", () => {
  test("a recipient's error is reported at its own path (it was 'to: must be an array' for all), and a template filled to nothing is refused", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const cases: [unknown[], Record<string, string[]>][] = [
      [[randomNumber(), "12345"], { "to.1": ["must be an E.164 phone number"] }],
      [[{ to: "12345" }], { "to.0.to": ["must be an E.164 phone number"] }],
      [[{ to: randomNumber(), vars: { a: 5 } }], { "to.0.vars.a": ["must be a string"] }],
      [[{ to: randomNumber(), vars: { a: "x".repeat(1601) } }], { "to.0.vars.a": ["must be at most 1600 characters"] }],
      [
        [randomNumber(), { to: randomNumber(), vars: { a: "" } }],
        { "to.0.vars": ["has no value for the variable {{a}} the text uses"], "to.1": ["makes an empty text once its variables are filled in"] },
      ],
    ];
    for (const [to, errors] of cases) {
      const res = await send(t.token, { hosted_sim: sim.id, to, text: "{{a}}" });
      expect([to, res.status, res.body.errors]).toEqual([to, 422, errors]);
    }
    expect(await used(t.org.id)).toBe(0);
  });

  test("a placeholder that is no variable, or a value under a name no text can use, is refused: either would send the braces as written", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const cases: [string, unknown[], Record<string, string[]>][] = [
      [
        "Hi {{First Name}} {{x.y}} {{first_name}}",
        [{ to: randomNumber(), vars: { first_name: "Ann" } }],
        { text: [expect.stringContaining("uses {{First Name}}, {{x.y}}, not a variable")] as never },
      ],
      [
        "Hi {{first_name}}",
        [{ to: randomNumber(), vars: { first_name: "Ann", "first name": "Ann" } }],
        { "to.0.vars.first name": [expect.stringContaining("not a variable name")] as never },
      ],
    ];
    for (const [text, to, errors] of cases) {
      const res = await send(t.token, { hosted_sim: sim.id, to, text });
      expect([text, res.status, res.body.errors]).toEqual([text, 422, errors]);
    }
    expect(await used(t.org.id)).toBe(0);
    // A single recipient's text is sent as written, braces and all, as before bulk sends existed.
    expect((await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "literal {{First Name}}" })).status).toBe(202);
  });

  test("a batch sent in another of the caller's organizations is read like its messages, across the memberships", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createOrg(ctx.sql);
    await ctx.sql`insert into memberships (user_id, organization_id, role) values (${a.user.id}, ${b.id}, 'member')`;
    const sim = await createSharedNumber(ctx.sql, [b.id]);
    const bulk = await ctx.request("POST", "/api/messages", {
      token: a.token,
      body: { hosted_sim: sim.id, to: [randomNumber(), randomNumber()], text: "b", send_at: ahead(3_600_000) },
      headers: { "x-organization-id": String(b.id) },
    });
    expect(bulk.status).toBe(202);
    const batch = bulk.body.data.batch_id;
    expect((await ctx.request("GET", `/api/messages/${bulk.body.data.messages[0].id}`, { token: a.token })).status).toBe(200);
    const list = await ctx.request("GET", `/api/messages?batch=${batch}`, { token: a.token });
    expect([list.status, list.body.meta?.total]).toEqual([200, 2]);
    expect((await ctx.request("GET", `/api/messages/batches/${batch}`, { token: a.token })).body.data).toMatchObject({ batch_id: batch, total: 2 });
    // Narrowed to the other organization: not found there.
    const narrowed = { token: a.token, headers: { "x-organization-id": String(a.org.id) } };
    expect((await ctx.request("GET", `/api/messages/batches/${batch}`, narrowed)).status).toBe(404);
  });

  test("1000 recipients against 999 left: refused whole (402), none stored; against 1000 left: all accepted in one batch", async () => {
    const short = await createTenant(ctx.sql, { plan: "pro" });
    const shortSim = await createSharedNumber(ctx.sql, [short.org.id]);
    await useQuota(ctx.sql, short.org.id, shortSim, 10_000 - 999);
    const recipients = Array.from({ length: 1000 }, (_, i) => `+1555${String(1_000_000 + i).padStart(7, "0")}`);
    const refused = await send(short.token, { hosted_sim: shortSim.id, to: recipients, text: "hello all", send_at: ahead(3_600_000) });
    expect(refused.status).toBe(402);
    expectErrorShape(refused.body, "plan_limit_reached");
    expect(refused.body.message).toContain("999");
    expect(await used(short.org.id)).toBe(10_000 - 999);
    expect((await ctx.request("GET", "/api/usage", { token: short.token })).body.data.monthly_messages.used).toBe(10_000 - 999);

    const t = await createTenant(ctx.sql, { plan: "pro" });
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    await useQuota(ctx.sql, t.org.id, sim, 10_000 - 1000);
    const started = performance.now();
    const ok = await send(t.token, { hosted_sim: sim.id, to: recipients, text: "hello all", send_at: ahead(3_600_000) });
    const ms = performance.now() - started;
    expect(ok.status).toBe(202);
    const { batch_id, messages } = ok.body.data;
    expect(batch_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(messages).toHaveLength(1000);
    expect(messages.map((m: any) => m.to)).toEqual(recipients);
    expect(messages.every((m: any) => m.batch_id === batch_id && m.status === "scheduled")).toBe(true);
    expect(await used(t.org.id)).toBe(10_000);
    const [jobs] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from jobs where queue = 'message.outbound.dispatch' and (payload->>'message_id')::bigint = any(${messages.map((m: any) => m.id)}::bigint[])`;
    expect(jobs!.n).toBe(1000);
    console.log(`bulk send of 1000 (scheduled) accepted in ${ms.toFixed(0)} ms`);
    // One more does not fit.
    expect((await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "x" })).status).toBe(402);
    // Cancelling gives units back.
    expect((await cancel(t.token, messages[0].id)).status).toBe(200);
    expect((await ctx.request("GET", "/api/usage", { token: t.token })).body.data.monthly_messages.used).toBe(10_000 - 1);
    expect((await send(t.token, { hosted_sim: sim.id, to: randomNumber(), text: "x", send_at: ahead(3_600_000) })).status).toBe(202);
    // The quota's count is the messages' count (sent or waiting, not cancelled or expired).
    expect((await ctx.request("GET", "/api/usage", { token: t.token })).body.data.monthly_messages.used).toBe(await used(t.org.id));
  }, 60_000);

  test("template variables per recipient; sent through the provider; batch listing and summary", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const [a, b, c] = [randomNumber(), randomNumber(), randomNumber()];
    const res = await send(t.token, {
      hosted_sim: sim.id,
      to: [
        { to: a, vars: { name: "Ada", code: "1" } },
        { to: b, vars: { name: "Bob", code: "2" } },
        { to: c, vars: { name: "Cy {{code}}", code: "3" } },
      ],
      text: "Hi {{name}}, your code is {{ code }}.",
    });
    expect(res.status).toBe(202);
    const { batch_id, messages } = res.body.data;
    expect(messages.map((m: any) => m.text)).toEqual(["Hi Ada, your code is 1.", "Hi Bob, your code is 2.", "Hi Cy {{code}}, your code is 3."]);
    for (const m of messages) await settled(t.token, m.id, "sent");
    expect(handed(a).map((r) => r.body)).toEqual(["Hi Ada, your code is 1."]);

    const list = await ctx.request("GET", `/api/messages?batch=${batch_id}&per_page=2`, { token: t.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((m: any) => m.to)).toEqual([a, b]);
    expect(list.body.meta.total).toBe(3);
    const summary = await ctx.request("GET", `/api/messages/batches/${batch_id}`, { token: t.token });
    expect(summary.body.data).toMatchObject({ batch_id, total: 3, counts: { sent: 3 } });

    const other = await createTenant(ctx.sql);
    expect((await ctx.request("GET", `/api/messages?batch=${batch_id}`, { token: other.token })).status).toBe(404);
    expect((await ctx.request("GET", `/api/messages/batches/${batch_id}`, { token: other.token })).status).toBe(404);
    for (const id of messages.map((m: any) => m.id)) expect((await cancel(other.token, id)).status).toBe(404);
    const mixed = await ctx.request("GET", `/api/messages?batch=${batch_id}&hosted_sim=${sim.id}`, { token: t.token });
    expect(mixed.status).toBe(422);
    expect(Object.keys(mixed.body.errors)).toEqual(["hosted_sim"]);
    const neither = await ctx.request("GET", "/api/messages", { token: t.token });
    expect(neither.status).toBe(422);
    expect(Object.keys(neither.body.errors)).toEqual(["hosted_sim"]);
    expect((await ctx.request("GET", "/api/messages?batch=nope", { token: t.token })).status).toBe(422);
  });

  test("validation: unknown variable named, duplicates, more than 1000, empty array; nothing stored", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const [a, b] = [randomNumber(), randomNumber()];
    const unknown = await send(t.token, { hosted_sim: sim.id, to: [{ to: a, vars: { name: "A" } }, b], text: "Hi {{name}} {{city}}" });
    expect(unknown.status).toBe(422);
    expectErrorShape(unknown.body, "validation_failed");
    expect(unknown.body.errors["to.0.vars"][0]).toContain("{{city}}");
    expect(unknown.body.errors["to.1.vars"]).toHaveLength(2);
    const dup = await send(t.token, { hosted_sim: sim.id, to: [a, b, a], text: "x" });
    expect(dup.status).toBe(422);
    expect(dup.body.errors["to.2"][0]).toContain("to.0");
    const many = Array.from({ length: 1001 }, (_, i) => `+1555${String(2_000_000 + i).padStart(7, "0")}`);
    const tooMany = await send(t.token, { hosted_sim: sim.id, to: many, text: "x" });
    expect(tooMany.status).toBe(422);
    expectErrorShape(tooMany.body, "validation_failed");
    const empty = await send(t.token, { hosted_sim: sim.id, to: [], text: "x" });
    expect(empty.status).toBe(422);
    const badItem = await send(t.token, { hosted_sim: sim.id, to: [a, "555"], text: "x" });
    expect(badItem.status).toBe(422);
    const longText = await send(t.token, { hosted_sim: sim.id, to: [{ to: a, vars: { v: "x".repeat(1600) } }], text: "{{v}}!" });
    expect(longText.status).toBe(422);
    expect(Object.keys(longText.body.errors)).toEqual(["to.0"]);
    expect(await used(t.org.id)).toBe(0);
    // A single `to` keeps today's answer exactly, braces sent as written.
    const single = await send(t.token, { hosted_sim: sim.id, to: a, text: "Hi {{name}}" });
    expect(single.status).toBe(202);
    expect(single.body.data).toMatchObject({ to: a, text: "Hi {{name}}", status: "queued" });
  });

  test("a bulk body may pass MAX_BODY_BYTES (64 KiB) up to 1 MiB; other routes keep the limit", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = Array.from({ length: 1000 }, (_, i) => ({
      to: `+1556${String(1_000_000 + i).padStart(7, "0")}`,
      vars: { name: `Recipient number ${i} of the list` },
    }));
    const body = { hosted_sim: sim.id, to, text: "Hello {{name}}", send_at: ahead(3_600_000) };
    expect(JSON.stringify(body).length).toBeGreaterThan(64 * 1024);
    const res = await send(t.token, body);
    expect(res.status).toBe(202);
    expect(res.body.data.messages[999].text).toBe("Hello Recipient number 999 of the list");
    const huge = await send(t.token, { ...body, to: to.map((r) => ({ ...r, vars: { name: "x".repeat(1100) } })) });
    expect(huge.status).toBe(413);
    expectErrorShape(huge.body, "payload_too_large");
    const team = await ctx.request("POST", "/api/teams", { token: t.token, body: { name: "x".repeat(70 * 1024) } });
    expect(team.status).toBe(413);
  });

  test("Idempotency-Key covers a bulk send: the retry answers the same batch, stores nothing more", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const body = { hosted_sim: sim.id, to: [randomNumber(), randomNumber()], text: "once", send_at: ahead(3_600_000) };
    const headers = { "Idempotency-Key": crypto.randomUUID() };
    const first = await ctx.request("POST", "/api/messages", { token: t.token, body, headers });
    const again = await ctx.request("POST", "/api/messages", { token: t.token, body, headers });
    expect(again.status).toBe(202);
    expect(again.body.data.batch_id).toBe(first.body.data.batch_id);
    expect(await used(t.org.id)).toBe(2);
  });
});
