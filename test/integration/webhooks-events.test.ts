import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { EventType } from "../../server/events/catalog";
import { decodeCursor } from "../../server/events/cursor";
import { appendEvents, type NewEvent } from "../../server/events/log";
import { QUEUES } from "../../server/jobs/registry";
import { createTenant } from "../fixtures";
import { lockWaiters } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";
import { createHook, createTeam, deliveriesMade, fastForwardRetries, logsOf, madeDeliveries, startReceiver, waitFor } from "./webhooks-helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await ctx?.close();
}, 60_000);

/** Appends events as their publishers do (one transaction), and wakes the readers. */
async function raise(events: NewEvent[]) {
  await ctx.sql.begin((tx) => appendEvents(tx, events));
  ctx.services.events.notify();
}

/** Events that belong to the organization, not to a team: no mapping needed. */
const ORGANIZATION_EVENTS: EventType[] = [
  "device.online",
  "device.offline",
  "device.disabled",
  "device.enabled",
  "device.revoked",
  "device.updated",
  "sim.verified",
  "sim.deactivated",
  "config.changed",
  "number.locked",
  "number.unlocked",
];

const patchBody = (body: Record<string, unknown>) => ({ name: "hook", url: "http://127.0.0.1:9/unused", ...body });

describe("event_types of an integration", () => {
  test("default message.received; set on create and update; * stands alone; unknown types and message.send are 422", async () => {
    const a = await createTenant(ctx.sql);
    const plain = await createHook(ctx, a.token, { url: "http://127.0.0.1:9/unused" });
    const shown = await ctx.request("GET", `/api/webhook-integrations/${plain.id}`, { token: a.token });
    expect(shown.body.data.event_types).toEqual(["message.received"]);

    const made = await ctx.request("POST", "/api/webhook-integrations", {
      token: a.token,
      body: patchBody({ event_types: ["device.online", "sim.verified", "device.online"] }),
    });
    expect(made.status).toBe(201);
    expect(made.body.data.event_types).toEqual(["device.online", "sim.verified"]);
    const id = made.body.data.id;

    const all = await ctx.request("PATCH", `/api/webhook-integrations/${id}`, { token: a.token, body: patchBody({ event_types: ["device.offline", "*"] }) });
    expect(all.body.data.event_types).toEqual(["*"]);
    // An update without event_types keeps them.
    const kept = await ctx.request("PATCH", `/api/webhook-integrations/${id}`, { token: a.token, body: patchBody({ name: "renamed" }) });
    expect(kept.body.data.event_types).toEqual(["*"]);
    const list = await ctx.request("GET", "/api/webhook-integrations", { token: a.token });
    expect(list.body.data.map((i: { event_types: string[] }) => i.event_types)).toEqual([["message.received"], ["*"]]);

    for (const [types, field] of [
      [["device.online", "device.exploded"], "event_types.1"],
      [["message.send"], "event_types.0"],
    ] as const) {
      const bad = await ctx.request("POST", "/api/webhook-integrations", { token: a.token, body: patchBody({ event_types: types }) });
      expect(bad.status).toBe(422);
      expect(Object.keys(bad.body.errors)).toContain(field);
      // A sentence: "The event_types.1 field names an unknown event type ..." (it read "field unknown event type").
      expect(bad.body.message).toStartWith(`The ${field} field names `);
      const badUpdate = await ctx.request("PATCH", `/api/webhook-integrations/${id}`, { token: a.token, body: patchBody({ event_types: types }) });
      expect(badUpdate.status).toBe(422);
    }
    expect((await ctx.request("POST", "/api/webhook-integrations", { token: a.token, body: patchBody({ event_types: [] }) })).status).toBe(422);
    expect((await ctx.request("POST", "/api/webhook-integrations", { token: a.token, body: patchBody({ event_types: "*" }) })).status).toBe(422);
    expect((await ctx.request("GET", `/api/webhook-integrations/${id}`, { token: a.token })).body.data.event_types).toEqual(["*"]);

    // The team view takes them too.
    const team = await createTeam(ctx.sql, a.org.id);
    const teamMade = await ctx.request("POST", `/api/teams/${team.id}/webhooks`, { token: a.token, body: patchBody({ event_types: ["message.failed"] }) });
    expect(teamMade.status).toBe(201);
    expect(teamMade.body.data.event_types).toEqual(["message.failed"]);
  });
});

describe("deliveries from the log", () => {
  test("each organization event type reaches the integrations subscribed to it (and *), never the others", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver();
    const hooks = new Map<string, number>();
    for (const type of [...ORGANIZATION_EVENTS, "*"]) {
      const { id, secret } = await createHook(ctx, a.token, { url: `${receiver.url}?for=${type}`, event_types: [type] });
      receiver.secrets.push(secret);
      hooks.set(type, id);
    }
    const plain = await createHook(ctx, a.token, { url: `${receiver.url}?for=default` });
    receiver.secrets.push(plain.secret);

    await raise(ORGANIZATION_EVENTS.map((type, n) => ({ organizationId: a.org.id, type, deviceId: 1, payload: { n } })));
    await waitFor(() => receiver.received.length >= ORGANIZATION_EVENTS.length * 2, 10_000, "deliveries");
    await deliveriesMade(ctx);
    const by = (who: string) => receiver.received.filter((r) => r.path.endsWith(`for=${who}`)).map((r) => r.event.type);
    for (const type of ORGANIZATION_EVENTS) expect(by(type)).toEqual([type]);
    expect(by("*").sort()).toEqual([...ORGANIZATION_EVENTS].sort());
    expect(by("default")).toEqual([]);
    expect(receiver.received.every((r) => r.verifiedWith !== null)).toBe(true);
    receiver.stop();
  }, 30_000);

  test("message events follow the mappings: the mapped team's messages only, none without a mapping", async () => {
    const a = await createTenant(ctx.sql);
    const x = await createTeam(ctx.sql, a.org.id);
    const y = await createTeam(ctx.sql, a.org.id);
    const receiver = startReceiver();
    const types = ["message.sent", "message.delivered", "message.failed"];
    const onX = await createHook(ctx, a.token, { url: `${receiver.url}?for=x`, event_types: types }, [{ teamId: x.id, mode: "always" }]);
    const unmapped = await createHook(ctx, a.token, { url: `${receiver.url}?for=none`, event_types: ["*"] });
    const lockOnly = await createHook(ctx, a.token, { url: `${receiver.url}?for=lock`, event_types: ["*"] }, [{ teamId: x.id, mode: "lock_required" }]);
    receiver.secrets.push(onX.secret, unmapped.secret, lockOnly.secret);

    const message = (id: number, teamId: number) => ({ message: { id, hosted_sim_id: null, team_id: teamId, locked: false, direction: "outbound" } });
    await raise([
      { organizationId: a.org.id, type: "message.sent", teamId: x.id, payload: message(1, x.id) },
      { organizationId: a.org.id, type: "message.sent", teamId: y.id, payload: message(2, y.id) },
      { organizationId: a.org.id, type: "message.delivered", teamId: x.id, payload: message(1, x.id) },
      { organizationId: a.org.id, type: "message.queued", teamId: x.id, payload: message(3, x.id) },
    ]);
    await waitFor(() => receiver.received.length >= 2, 10_000, "deliveries");
    await deliveriesMade(ctx);
    const rows = (await madeDeliveries(ctx.sql, { integrationIds: [onX.id, unmapped.id, lockOnly.id] }))
      .map(({ webhook_integration_id, event_type, message_id }) => ({ webhook_integration_id, event_type, message_id }))
      .sort((p, q) => q.event_type.localeCompare(p.event_type));
    expect(rows).toEqual([
      { webhook_integration_id: onX.id, event_type: "message.sent", message_id: 1 },
      { webhook_integration_id: onX.id, event_type: "message.delivered", message_id: 1 },
    ]);
    receiver.stop();
  }, 30_000);

  test("an integration never receives another organization's events, even subscribed to *", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const receiver = startReceiver();
    const hookB = await createHook(ctx, b.token, { url: receiver.url, event_types: ["*"] });
    receiver.secrets.push(hookB.secret);
    await raise([
      { organizationId: a.org.id, type: "device.online", payload: { who: "a" } },
      { organizationId: b.org.id, type: "device.online", payload: { who: "b" } },
    ]);
    await waitFor(() => receiver.received.length >= 1, 10_000, "B's delivery");
    await deliveriesMade(ctx);
    expect(receiver.received.map((r) => r.event.data.who)).toEqual(["b"]);
    receiver.stop();
  }, 30_000);
});

describe("webhook-id is the event id", () => {
  test("the same across a retry, a redelivery and a replay; standardwebhooks verifies each", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver((n) => (n === 1 ? new Response("not yet", { status: 500 }) : new Response("ok")));
    const hook = await createHook(ctx, a.token, { url: receiver.url, event_types: ["device.offline"], retry_count: 3 });
    receiver.secrets.push(hook.secret);
    const since = new Date(Date.now() - 60_000).toISOString();
    await raise([{ organizationId: a.org.id, type: "device.offline", deviceId: 7, payload: { device_id: 7, is_online: false } }]);
    await waitFor(() => receiver.received.length === 1, 10_000, "first attempt");
    // The retry is due in ~5 s: made due now, again until it is sent (its job may still be settling).
    await waitFor(
      async () => {
        await fastForwardRetries(ctx, hook.id);
        return receiver.received.length === 2;
      },
      10_000,
      "the retry",
    );

    const id = receiver.received[0]!.headers["webhook-id"]!;
    expect(decodeCursor(id)).not.toBeNull();
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(id);
    expect(receiver.received[0]!.event).toMatchObject({ id, type: "device.offline", data: { device_id: 7, is_online: false } });

    const logs = await logsOf(ctx, a.token, hook.id);
    expect(logs.data.map((l) => [l.event_id, l.status])).toEqual([
      [id, "succeeded"],
      [id, "retrying"],
    ]);
    const redelivered = await ctx.request("POST", `/api/webhook-integrations/${hook.id}/logs/${logs.data[1].id}/redeliver`, { token: a.token });
    expect(redelivered.status).toBe(202);
    expect(redelivered.body.data).toMatchObject({ event_id: id, event_type: "device.offline" });
    await waitFor(() => receiver.received.length === 3, 10_000, "the redelivery");

    const replayed = await ctx.request("POST", `/api/webhook-integrations/${hook.id}/replay`, {
      token: a.token,
      body: { since, until: new Date(Date.now() + 60_000).toISOString() },
    });
    expect(replayed.status).toBe(202);
    expect(replayed.body.data).toMatchObject({ deliveries: 1, event_types: ["device.offline"] });
    await waitFor(() => receiver.received.length === 4, 10_000, "the replay");

    for (const r of receiver.received) {
      expect(r.verifiedWith).toBe(hook.secret);
      expect(r.headers["webhook-id"]).toBe(id);
      expect(r.body).toBe(receiver.received[0]!.body);
    }
    receiver.stop();
  }, 30_000);

  test("a first attempt that succeeded is its log record alone; its redelivery is built from the event log, the same bytes; past retention 409", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver();
    const hook = await createHook(ctx, a.token, { url: receiver.url, event_types: ["device.offline"] });
    receiver.secrets.push(hook.secret);
    await raise([{ organizationId: a.org.id, type: "device.offline", deviceId: 8, payload: { device_id: 8, is_online: false } }]);
    await waitFor(() => receiver.received.length === 1, 10_000, "first attempt");
    await deliveriesMade(ctx);
    const [log] = (await logsOf(ctx, a.token, hook.id)).data;
    expect(log).toMatchObject({ attempt: 1, status: "succeeded", http_status: 200 });
    expect(await ctx.sql`select 1 from webhook_deliveries where webhook_integration_id = ${hook.id}`).toHaveLength(0);

    const redelivered = await ctx.request("POST", `/api/webhook-integrations/${hook.id}/logs/${log.id}/redeliver`, { token: a.token });
    expect(redelivered.status).toBe(202);
    await waitFor(() => receiver.received.length === 2, 10_000, "the redelivery");
    const [first, again] = receiver.received;
    expect(again!.verifiedWith).toBe(hook.secret);
    expect(again!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
    expect(again!.body).toBe(first!.body);

    // The event gone from the log (retention): nothing to build the body from.
    const at = decodeCursor(log.event_id)!;
    await ctx.sql`delete from events where id = ${at.id}`;
    const gone = await ctx.request("POST", `/api/webhook-integrations/${hook.id}/logs/${log.id}/redeliver`, { token: a.token });
    expect(gone.status).toBe(409);
    expectErrorShape(gone.body, "invalid_state");
    receiver.stop();
  }, 30_000);

  test("redelivery: a test event's record is 409, a record of another integration 404", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver();
    const hook = await createHook(ctx, a.token, { url: receiver.url });
    const other = await createHook(ctx, a.token, { url: receiver.url });
    expect((await ctx.request("POST", `/api/webhook-integrations/${hook.id}/test`, { token: a.token })).body.success).toBe(true);
    const [log] = (await logsOf(ctx, a.token, hook.id)).data;
    const test409 = await ctx.request("POST", `/api/webhook-integrations/${hook.id}/logs/${log.id}/redeliver`, { token: a.token });
    expect(test409.status).toBe(409);
    const wrong = await ctx.request("POST", `/api/webhook-integrations/${other.id}/logs/${log.id}/redeliver`, { token: a.token });
    expect(wrong.status).toBe(404);
    receiver.stop();
  });
});

describe("an integration deleted meanwhile", () => {
  test.skipIf(!process.env.DATABASE_URL)("a redelivery or a replay racing the integration's deletion answers 404, never 500", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver();
    const hook = await createHook(ctx, a.token, { url: receiver.url, event_types: ["device.offline"] });
    const since = new Date(Date.now() - 60_000).toISOString();
    await raise([{ organizationId: a.org.id, type: "device.offline", deviceId: 9, payload: { device_id: 9, is_online: false } }]);
    await waitFor(() => receiver.received.length === 1, 10_000, "first attempt");
    await deliveriesMade(ctx);
    const [log] = (await logsOf(ctx, a.token, hook.id)).data;
    const requests = [
      () => ctx.request("POST", `/api/webhook-integrations/${hook.id}/logs/${log.id}/redeliver`, { token: a.token }),
      () =>
        ctx.request("POST", `/api/webhook-integrations/${hook.id}/replay`, {
          token: a.token,
          body: { since, until: new Date(Date.now() + 60_000).toISOString() },
        }),
    ];
    // The deletion holds its transaction open while each request finds the integration, then commits.
    let commit!: () => void;
    let deleted!: () => void;
    const held = new Promise<void>((r) => (commit = r));
    const deletedUncommitted = new Promise<void>((r) => (deleted = r));
    const deleting = ctx.sql.begin(async (tx) => {
      await tx`delete from webhook_integrations where id = ${hook.id}`;
      deleted();
      await held;
    });
    await deletedUncommitted;
    const answers = requests.map((r) => r());
    await lockWaiters(ctx.sql, 2);
    commit();
    await deleting;
    for (const res of await Promise.all(answers)) {
      expect(res.status).toBe(404);
      expectErrorShape(res.body, "not_found");
    }
    receiver.stop();
  });
});

describe("replay", () => {
  test("replays the window's subscribed events only, filtered by event_types; checks the window", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver();
    const hook = await createHook(ctx, a.token, { url: receiver.url, event_types: ["device.online", "device.offline"] });
    receiver.secrets.push(hook.secret);
    // Made before the integration could get them live: raised with the integration inactive.
    await ctx.request("PATCH", `/api/webhook-integrations/${hook.id}`, { token: a.token, body: { name: "hook", url: receiver.url, is_active: false } });
    await raise([
      { organizationId: a.org.id, type: "device.online", payload: { n: 0 } },
      { organizationId: a.org.id, type: "device.online", payload: { n: 1 } },
      { organizationId: a.org.id, type: "device.offline", payload: { n: 2 } },
      { organizationId: a.org.id, type: "sim.verified", payload: { n: 3 } },
      { organizationId: a.org.id, type: "device.online", payload: { n: 4 } },
    ]);
    await deliveriesMade(ctx);
    // n 0 happened two hours ago, n 4 an hour from now: outside the window.
    await ctx.sql`update events set created_at = now() - interval '2 hours' where organization_id = ${a.org.id} and payload->>'n' = '0'`;
    await ctx.sql`update events set created_at = now() + interval '1 hour' where organization_id = ${a.org.id} and payload->>'n' = '4'`;
    const window = { since: new Date(Date.now() - 3_600_000).toISOString(), until: new Date(Date.now() + 60_000).toISOString() };
    const path = `/api/webhook-integrations/${hook.id}/replay`;
    expect((await ctx.request("POST", path, { token: a.token, body: window })).status).toBe(409); // inactive
    await ctx.request("PATCH", `/api/webhook-integrations/${hook.id}`, { token: a.token, body: { name: "hook", url: receiver.url, is_active: true } });

    const only = await ctx.request("POST", path, { token: a.token, body: { ...window, event_types: ["device.online", "sim.verified"] } });
    expect(only.status).toBe(202);
    expect(only.body.data).toMatchObject({ deliveries: 1, event_types: ["device.online"] });
    await waitFor(() => receiver.received.length === 1, 10_000, "replay");
    expect(receiver.received.map((r) => r.event.data.n)).toEqual([1]);
    // Recorded: the replay is done (a replay still being sent refuses the next, below).
    await waitFor(async () => (await logsOf(ctx, a.token, hook.id)).data.length === 1, 10_000, "the attempt's record");

    const all = await ctx.request("POST", path, { token: a.token, body: window });
    expect(all.body.data.deliveries).toBe(2);
    await waitFor(() => receiver.received.length === 3, 10_000, "replay");
    // Sent a few at once: in any order.
    expect(
      receiver.received
        .slice(1)
        .map((r) => r.event.data.n as number)
        .sort(),
    ).toEqual([1, 2]);
    const queues = await ctx.sql<{ origin: string }[]>`select distinct origin from webhook_deliveries where webhook_integration_id = ${hook.id}`;
    expect(queues.map((q) => q.origin)).toEqual(["replay"]);

    for (const [body, field] of [
      [{ since: window.until, until: window.since }, "until"],
      [{ since: new Date(Date.now() - 8 * 86_400_000).toISOString(), until: window.until }, "until"],
      [{ since: "yesterday", until: window.until }, "since"],
      [{ since: "Jan 1 2026", until: window.until }, "since"],
      // Dates JavaScript takes and PostgreSQL does not store: 422, not a 500 from the database.
      [{ since: "0000-01-01T00:00:00Z", until: "0000-01-02T00:00:00Z" }, "since"],
      [{ since: "+099999-01-01T00:00:00Z", until: "+099999-01-02T00:00:00Z" }, "until"],
      [{ ...window, event_types: ["nope"] }, "event_types.0"],
    ] as const) {
      const bad = await ctx.request("POST", path, { token: a.token, body });
      expect(bad.status).toBe(422);
      expect(Object.keys(bad.body.errors)).toContain(field);
    }
    receiver.stop();
  }, 30_000);

  test("a replay runs on its own queue with few attempts at once; live deliveries pass it; one replay at a time per integration", async () => {
    const a = await createTenant(ctx.sql);
    let inFlight = 0;
    let most = 0;
    const receiver = startReceiver(async (_n, req) => {
      const replayed = new URL(req.url).searchParams.get("r") === "1";
      if (!replayed) return new Response("ok");
      most = Math.max(most, ++inFlight);
      await Bun.sleep(200);
      inFlight--;
      return new Response("ok");
    });
    const slow = await createHook(ctx, a.token, { url: `${receiver.url}?r=1`, event_types: ["device.updated"] });
    const live = await createHook(ctx, a.token, { url: `${receiver.url}?r=0`, event_types: ["device.online"] });
    receiver.secrets.push(slow.secret, live.secret);
    await ctx.request("PATCH", `/api/webhook-integrations/${slow.id}`, {
      token: a.token,
      body: { name: "hook", url: `${receiver.url}?r=1`, is_active: false },
    });
    await raise(Array.from({ length: 40 }, (_, n) => ({ organizationId: a.org.id, type: "device.updated" as const, payload: { n } })));
    await deliveriesMade(ctx);
    await ctx.request("PATCH", `/api/webhook-integrations/${slow.id}`, { token: a.token, body: { name: "hook", url: `${receiver.url}?r=1`, is_active: true } });

    const window = { since: new Date(Date.now() - 60_000).toISOString(), until: new Date(Date.now() + 60_000).toISOString() };
    const replay = await ctx.request("POST", `/api/webhook-integrations/${slow.id}/replay`, { token: a.token, body: window });
    expect(replay.body.data.deliveries).toBe(40);
    const again = await ctx.request("POST", `/api/webhook-integrations/${slow.id}/replay`, { token: a.token, body: window });
    expect(again.status).toBe(409);
    const [queued] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from jobs where queue = 'webhook.replay'`;
    expect(queued!.n).toBeGreaterThan(0);

    await waitFor(() => receiver.received.some((r) => r.path.includes("r=1")), 10_000, "replay started");
    await raise([{ organizationId: a.org.id, type: "device.online", payload: { live: true } }]);
    await waitFor(() => receiver.received.some((r) => r.event.data.live), 5_000, "the live delivery");
    // The live event got through while the replay (40 × 200 ms, 4 at a time: about 2 s) was still being sent.
    expect(receiver.received.filter((r) => r.path.includes("r=1")).length).toBeLessThan(40);
    await waitFor(() => receiver.received.filter((r) => r.path.includes("r=1")).length === 40, 20_000, "the whole replay");
    expect(most).toBeLessThanOrEqual(QUEUES["webhook.replay"].concurrency);
    receiver.stop();
  }, 40_000);

  test("replays of one integration sent at once: one is accepted, the others answer 409", async () => {
    const a = await createTenant(ctx.sql);
    const receiver = startReceiver(async () => {
      await Bun.sleep(1000);
      return new Response("ok");
    });
    const hook = await createHook(ctx, a.token, { url: receiver.url, event_types: ["device.updated"] });
    await raise(Array.from({ length: 10 }, (_, n) => ({ organizationId: a.org.id, type: "device.updated" as const, payload: { n } })));
    const window = { since: new Date(Date.now() - 60_000).toISOString(), until: new Date(Date.now() + 60_000).toISOString() };
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => ctx.request("POST", `/api/webhook-integrations/${hook.id}/replay`, { token: a.token, body: window })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409, 409]);
    const [replayed] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where webhook_integration_id = ${hook.id} and origin = 'replay'`;
    expect(replayed!.n).toBe(10);
    receiver.stop();
  }, 30_000);
});
