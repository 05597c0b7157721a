import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storeInboundMessage } from "../../server/messages/inbound";
import type { Delivery as BusMessage } from "../../server/realtime/hub";
import { ENDPOINT_CONCURRENCY } from "../../server/webhooks/engine";
import { type FirstAttempt, recordFirstAttempts } from "../../server/webhooks/live-store";
import { createTenant, createUser } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import {
  createHook,
  createNumber,
  createTeam,
  deliveriesMade,
  lockNumber,
  logsOf,
  madeDeliveries,
  receiveSms,
  startReceiver,
  startSmtp,
  waitFor,
} from "./webhooks-helpers";

let ctx: TestContext;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
beforeAll(async () => {
  smtp = await startSmtp();
  ctx = await createTestContext({ SMTP_URL: smtp.url });
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await ctx?.close();
  await smtp?.stop();
}, 60_000);

/** Integration ids that got a delivery for a message, once its fan-out has run and the log consumer has read its events. */
async function deliveredTo(messageId: number): Promise<number[]> {
  await deliveriesMade(ctx);
  return (await madeDeliveries(ctx.sql, { messageId })).map((r) => r.webhook_integration_id);
}

describe("forwarding rules", () => {
  test("always vs lock_required with locks held by different teams; inactive mappings and integrations send nothing", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const x = await createTeam(ctx.sql, a.org.id, "X");
    const y = await createTeam(ctx.sql, a.org.id, "Y");
    const bt = await createTeam(ctx.sql, b.org.id, "B");
    const url = "http://127.0.0.1:9/unused";
    const hook = (m: Parameters<typeof createHook>[3], token = a.token) => createHook(ctx, token, { url }, m).then((h) => h.id);
    const alwaysX = await hook([{ teamId: x.id, mode: "always" }]);
    const lockX = await hook([{ teamId: x.id, mode: "lock_required" }]);
    const lockY = await hook([{ teamId: y.id, mode: "lock_required" }]);
    const alwaysY = await hook([{ teamId: y.id, mode: "always" }]);
    const inactiveMapping = await hook([{ teamId: x.id, mode: "always", active: false }]);
    const inactiveHook = await hook([{ teamId: x.id, mode: "always" }]);
    await ctx.request("PATCH", `/api/webhook-integrations/${inactiveHook}`, { token: a.token, body: { name: "off", url, is_active: false } });
    const both = await hook([
      { teamId: x.id, mode: "always" },
      { teamId: y.id, mode: "lock_required" },
    ]);
    const orgB = await hook([{ teamId: bt.id, mode: "always" }], b.token);
    // Keep these from being sent anywhere: this test is about who gets a delivery, not sending.
    await ctx.sql`update jobs set run_at = now() + interval '1 hour' where queue = 'webhook.delivery'`;

    const onX = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: x.id }, { orgId: b.org.id }]);
    const noTeam = await createNumber(ctx.sql, [{ orgId: a.org.id }]);

    // Unlocked number on team X, shared with organization B.
    expect(await deliveredTo((await receiveSms(ctx, onX.id)).messageId)).toEqual([alwaysX, both, orgB].sort((p, q) => p - q));
    // Locked by A's team Y: B sees nothing; lock_required of Y fires; the number is still X's for always.
    await lockNumber(ctx.sql, onX.id, a.org.id, y.id);
    expect(await deliveredTo((await receiveSms(ctx, onX.id)).messageId)).toEqual([alwaysX, lockY, both].sort((p, q) => p - q));
    // A number on no team: every always mapping of the organization.
    expect(await deliveredTo((await receiveSms(ctx, noTeam.id)).messageId)).toEqual([alwaysX, alwaysY, both].sort((p, q) => p - q));
    // Locked by team X: lock_required of X too, not of Y.
    await lockNumber(ctx.sql, noTeam.id, a.org.id, x.id);
    expect(await deliveredTo((await receiveSms(ctx, noTeam.id)).messageId)).toEqual([alwaysX, lockX, alwaysY, both].sort((p, q) => p - q));
    expect(await madeDeliveries(ctx.sql, { integrationIds: [inactiveMapping, inactiveHook] })).toEqual([]);
  }, 30_000);

  test("one delivery per integration even when several mappings match", async () => {
    const a = await createTenant(ctx.sql);
    const x = await createTeam(ctx.sql, a.org.id);
    const receiver = startReceiver();
    const y = await createTeam(ctx.sql, a.org.id);
    // Locked by X on a number of no team: the always mappings of X and of Y both match; one delivery, team X.
    const { id, secret } = await createHook(ctx, a.token, { url: receiver.url }, [
      { teamId: x.id, mode: "always" },
      { teamId: y.id, mode: "always" },
    ]);
    await ctx.request("POST", `/api/webhook-integrations/${id}/mappings`, {
      token: a.token,
      body: { team_id: (await createTeam(ctx.sql, a.org.id)).id, forwarding_mode: "lock_required" },
    });
    receiver.secrets.push(secret);
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id }]);
    await lockNumber(ctx.sql, sim.id, a.org.id, x.id);
    const { messageId } = await receiveSms(ctx, sim.id);
    expect(await deliveredTo(messageId)).toEqual([id]);
    await waitFor(() => receiver.received.length === 1);
    expect(receiver.received[0]!.event.data.team.id).toBe(x.id);
    receiver.stop();
  }, 30_000);
});

describe("a lock that releases on a message (issue 17 item 3)", () => {
  test("the releasing message is forwarded to the locking team's lock_required mapping; the next one to the always mappings of both organizations", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const x = await createTeam(ctx.sql, a.org.id, "X");
    const bt = await createTeam(ctx.sql, b.org.id, "B");
    const receiver = startReceiver();
    const lockX = await createHook(ctx, a.token, { url: receiver.url }, [{ teamId: x.id, mode: "lock_required" }]);
    receiver.secrets.push(lockX.secret);
    const alwaysA = (await createHook(ctx, a.token, { url: "http://127.0.0.1:9/unused" }, [{ teamId: x.id, mode: "always" }])).id;
    const alwaysB = (await createHook(ctx, b.token, { url: "http://127.0.0.1:9/unused" }, [{ teamId: bt.id, mode: "always" }])).id;
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id }, { orgId: b.org.id }]);
    const locked = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { team_id: x.id, release_on_message: true } });
    expect(locked.status).toBe(200);

    const first = await receiveSms(ctx, sim.id, "Your code is 482913");
    expect(await deliveredTo(first.messageId)).toEqual([lockX.id, alwaysA].sort((p, q) => p - q));
    await waitFor(() => receiver.received.length === 1);
    expect(receiver.received[0]!).toMatchObject({ verifiedWith: lockX.secret });
    expect(receiver.received[0]!.event.data).toMatchObject({ id: first.messageId, locked: true, team_id: x.id });

    const next = await receiveSms(ctx, sim.id);
    expect(await deliveredTo(next.messageId)).toEqual([alwaysA, alwaysB].sort((p, q) => p - q));
    receiver.stop();
  }, 30_000);
});

describe("one team per message (issue 15 item 8)", () => {
  test("webhook, realtime and history name the same team: the locking team under a lock, the number's team otherwise", async () => {
    const a = await createTenant(ctx.sql);
    const x = await createTeam(ctx.sql, a.org.id, "X");
    const y = await createTeam(ctx.sql, a.org.id, "Y");
    const receiver = startReceiver();
    const { secret } = await createHook(ctx, a.token, { url: receiver.url }, [{ teamId: x.id, mode: "always" }]);
    receiver.secrets.push(secret);
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: x.id }]);
    const live: { channel: string; team_id: number | null; id: number }[] = [];
    ctx.services.realtime.watch((m: BusMessage) => {
      const message = (m.data as { message?: { id: number; team_id: number | null; direction?: string } } | null)?.message;
      if (m.event === "message.received" && message) live.push({ channel: m.channel, team_id: message.team_id, id: message.id });
    });

    const unlocked = (await receiveSms(ctx, sim.id)).messageId;
    await lockNumber(ctx.sql, sim.id, a.org.id, y.id);
    const locked = (await receiveSms(ctx, sim.id)).messageId;
    await waitFor(() => receiver.received.length === 2);
    await waitFor(() => live.filter((e) => e.id === locked).length >= 3 && live.filter((e) => e.id === unlocked).length >= 3);

    const history = await ctx.request("GET", `/api/messages?hosted_sim=${sim.id}`, { token: a.token });
    expect(history.status).toBe(200);
    const expected = new Map([
      [unlocked, x],
      [locked, y],
    ]);
    for (const [id, team] of expected) {
      const event = receiver.received.find((r) => r.event.data.id === id)!.event.data;
      expect({ team_id: event.team_id, team: event.team }).toEqual({ team_id: team.id, team: { id: team.id, name: team.name } });
      expect(history.body.data.find((m: { id: number }) => m.id === id).team_id).toBe(team.id);
      const events = live.filter((e) => e.id === id);
      expect(new Set(events.map((e) => e.team_id))).toEqual(new Set([team.id]));
      expect(events.map((e) => e.channel)).toContain(`private-team.${team.id}`);
    }
    receiver.stop();
  }, 30_000);
});

describe("failing endpoints", () => {
  test("410 Gone disables the integration at once, says why in the log and mails owners and admins", async () => {
    const a = await createTenant(ctx.sql);
    const admin = await createUser(ctx.sql, { orgId: a.org.id, role: "admin" });
    const member = await createUser(ctx.sql, { orgId: a.org.id, role: "member" });
    const team = await createTeam(ctx.sql, a.org.id);
    const receiver = startReceiver(() => new Response("gone", { status: 410 }));
    const { id } = await createHook(ctx, a.token, { name: "Gone hook", url: receiver.url, retry_count: 5 }, [{ teamId: team.id, mode: "always" }]);
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }]);
    await receiveSms(ctx, sim.id);
    const log = await waitFor(async () => (await logsOf(ctx, a.token, id)).data[0]);
    expect(log).toMatchObject({ status: "failed", http_status: 410, attempt: 1 });
    expect(log.error).toContain("integration disabled");
    const mail = await waitFor(() => smtp.mails.find((m) => m.data.includes("Gone hook")), 10_000, "alert mail");
    expect(mail.to.sort()).toEqual([a.user.email, admin.email].sort());
    expect(mail.to).not.toContain(member.email);
    const shown = await ctx.request("GET", `/api/webhook-integrations/${id}`, { token: a.token });
    expect(shown.body.data.is_active).toBe(false);
    const { messageId } = await receiveSms(ctx, sim.id);
    expect(await deliveredTo(messageId)).toEqual([]);
    expect(receiver.received).toHaveLength(1);
    receiver.stop();
  }, 30_000);

  test("failing without a break past WEBHOOK_DISABLE_AFTER_DAYS disables; a success breaks the run; re-enabling clears it", async () => {
    const a = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    let healthy = false;
    const receiver = startReceiver(() => (healthy ? new Response("ok") : new Response("down", { status: 500 })));
    const { id } = await createHook(ctx, a.token, { name: "Flaky hook", url: receiver.url, retry_count: 0 }, [{ teamId: team.id, mode: "always" }]);
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }]);
    const failingSince = async () => (await ctx.sql<{ f: Date | null }[]>`select failing_since as f from webhook_integrations where id = ${id}`)[0]!.f;

    await receiveSms(ctx, sim.id);
    await waitFor(failingSince, 10_000, "failure run to start");
    healthy = true;
    await receiveSms(ctx, sim.id);
    await waitFor(async () => (await failingSince()) === null, 10_000, "success to break the run");

    healthy = false;
    await ctx.sql`update webhook_integrations set failing_since = now() - interval '6 days' where id = ${id}`;
    await receiveSms(ctx, sim.id);
    const log = await waitFor(async () => {
      const l = (await logsOf(ctx, a.token, id)).data[0];
      return l?.error?.includes("disabled") && l;
    });
    expect(log.error).toContain("disable period");
    await waitFor(() => smtp.mails.find((m) => m.data.includes("Flaky hook")), 10_000, "alert mail");
    const [alert] = await ctx.sql`select kind, subject_id from alerts where organization_id = ${a.org.id}`;
    expect(alert).toMatchObject({ kind: "webhook.disabled", subject_id: id });

    await ctx.request("PATCH", `/api/webhook-integrations/${id}`, { token: a.token, body: { name: "Flaky hook", url: receiver.url, is_active: true } });
    expect(await failingSince()).toBeNull();
    receiver.stop();
  }, 30_000);
});

describe("failure runs", () => {
  const failingSinceOf = async (id: number) =>
    (await ctx.sql<{ f: Date | null }[]>`select failing_since as f from webhook_integrations where id = ${id}`)[0]!.f;

  test("one batch of records: a success ends the run, a failure after it starts a new one (not the old run going on)", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver();
    const { id } = await createHook(ctx, a.token, { url: receiver.url });
    const attempt = (reached: "succeeded" | "failed", n: number): FirstAttempt => ({
      integrationId: id,
      deliveryId: null,
      eventId: `evt_run_${id}_${n}`,
      eventType: "message.received",
      messageId: null,
      attempt: 1,
      status: reached === "succeeded" ? "succeeded" : "failed",
      httpStatus: reached === "succeeded" ? 200 : 500,
      responseBody: null,
      responseTimeMs: 5,
      error: reached === "succeeded" ? null : "HTTP 500",
      retryAt: null,
      reached,
      jobId: null,
      body: "{}",
    });
    const recent = (f: Date | null) => f !== null && Date.now() - f.getTime() < 60_000;
    await ctx.sql`update webhook_integrations set failing_since = now() - interval '6 days' where id = ${id}`;
    await recordFirstAttempts(ctx.sql, [attempt("failed", 1)]);
    expect(recent(await failingSinceOf(id))).toBe(false); // the old run goes on
    await recordFirstAttempts(ctx.sql, [attempt("succeeded", 2), attempt("failed", 3)]);
    expect(recent(await failingSinceOf(id))).toBe(true); // a new run, started after the success
    await recordFirstAttempts(ctx.sql, [attempt("failed", 4), attempt("succeeded", 5)]);
    expect(await failingSinceOf(id)).toBeNull();
    await recordFirstAttempts(ctx.sql, [attempt("failed", 6), attempt("failed", 7)]);
    expect(recent(await failingSinceOf(id))).toBe(true);
    receiver.stop();
  });

  test("a failure right after a success in the same lane does not disable the integration from the run the lane read before", async () => {
    const a = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }]);
    // Every slot's first request held, then answered 200; every request after them fails.
    const held: Array<() => void> = [];
    let failing = false;
    const receiver = startReceiver(() =>
      failing ? new Response("down", { status: 500 }) : new Promise<Response>((resolve) => held.push(() => resolve(new Response("ok")))),
    );
    const { id } = await createHook(ctx, a.token, { url: receiver.url, retry_count: 0 }, [{ teamId: team.id, mode: "always" }]);
    await ctx.sql`update webhook_integrations set failing_since = now() - interval '6 days' where id = ${id}`;
    const n = ENDPOINT_CONCURRENCY + 4;
    await ctx.sql.begin(async (tx) => {
      for (let i = 0; i < n; i++)
        await storeInboundMessage(tx, { hostedSimId: sim.id, from: "+15550001111", text: `run ${i}`, source: "provider", receivedAt: new Date() });
    });
    ctx.services.events.notify();
    await waitFor(() => held.length === ENDPOINT_CONCURRENCY, 10_000, "every slot taken");
    failing = true;
    for (const answer of held.splice(0)) answer();
    const logs = await waitFor(async () => {
      const l = (await logsOf(ctx, a.token, id)).data;
      return l.length === n && l;
    });
    expect(logs.filter((l: { status: string }) => l.status === "failed")).toHaveLength(4);
    expect(logs.some((l: { error: string | null }) => l.error?.includes("disabled"))).toBe(false);
    expect((await ctx.sql`select is_active from webhook_integrations where id = ${id}`)[0]!.is_active).toBe(true);
    receiver.stop();
  }, 30_000);
});

describe("isolation", () => {
  const percentile = (xs: number[], p: number) => [...xs].sort((m, n) => m - n)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

  /** Sends `n` SMS at a steady pace and returns each one's latency until the healthy receiver had it. */
  async function healthyLatencies(simId: number, receiver: ReturnType<typeof startReceiver>, n: number) {
    const sentAt = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const text = `iso-${simId}-${i}`;
      sentAt.set(text, performance.now());
      await receiveSms(ctx, simId, text);
    }
    await waitFor(() => receiver.received.length >= n, 20_000, "healthy deliveries");
    return receiver.received.map((r) => r.at - sentAt.get(r.event.data.text)!);
  }

  test("a dead endpoint with retries does not slow deliveries to a healthy one", async () => {
    const a = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const hung: Array<() => void> = [];
    const dead = startReceiver(() => new Promise<Response>((resolve) => hung.push(() => resolve(new Response("late")))));
    const healthyAlone = startReceiver();
    const healthyBeside = startReceiver();
    await createHook(ctx, a.token, { url: healthyAlone.url }, [{ teamId: team.id, mode: "always" }]);
    const other = await createTeam(ctx.sql, a.org.id);
    await createHook(ctx, a.token, { url: healthyBeside.url }, [{ teamId: other.id, mode: "always" }]);
    const deadHook = await createHook(ctx, a.token, { url: dead.url, timeout_seconds: 10, retry_count: 3 }, [{ teamId: other.id, mode: "always" }]);

    const alone = await healthyLatencies((await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }])).id, healthyAlone, 60);
    const beside = await healthyLatencies((await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: other.id }])).id, healthyBeside, 60);
    const figures = {
      aloneP50: percentile(alone, 50),
      aloneMax: Math.max(...alone),
      besideP50: percentile(beside, 50),
      besideMax: Math.max(...beside),
      deadInFlight: dead.received.length,
    };
    console.log(
      "webhook isolation (ms):",
      JSON.stringify(figures, (_k, v) => (typeof v === "number" ? Math.round(v) : v)),
    );
    // The dead endpoint holds its 16 slots for 10 s each: behind it, a healthy delivery would take 10 s or more.
    expect(dead.received.length).toBeGreaterThanOrEqual(10);
    expect(figures.besideMax).toBeLessThan(8_000);
    await ctx.request("PATCH", `/api/webhook-integrations/${deadHook.id}`, { token: a.token, body: { name: "dead", url: dead.url, is_active: false } });
    for (const release of hung) release();
    dead.stop();
    healthyAlone.stop();
    healthyBeside.stop();
  }, 30_000);

  test("delivery outcomes are counted in simhost_webhook_deliveries_total", async () => {
    const text = await ctx.services.metrics.registry.getSingleMetricAsString("simhost_webhook_deliveries_total");
    expect(text).toMatch(/outcome="succeeded"} \d+/);
    expect(text).toMatch(/outcome="failed"} \d+/);
  }, 30_000);
});
