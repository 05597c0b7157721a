import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { event as events } from "../../server/events/catalog";
import { createTenant } from "../fixtures";
import { raiseEvents } from "../fixtures-events";
import type { TestContext } from "../helpers";
import { awaitCallback, openRaw, stalledClient, startServer, stopServer } from "./realtime-client";

const METRICS_TOKEN = "realtime-metrics-token-0123";

let ctx: TestContext & { baseUrl: string; port: number };
let url: string;

beforeAll(async () => {
  ctx = await startServer({ METRICS_TOKEN });
  url = `ws://127.0.0.1:${ctx.port}/app/${ctx.services.realtime.credentials.key}?protocol=7&client=test&version=1`;
}, 60_000);

afterAll(async () => {
  await stopServer(ctx);
});

/** A connected bare client and its socket id. */
async function connect() {
  const raw = await openRaw(url);
  const established = await raw.event("pusher:connection_established");
  return { raw, socketId: established.data.socket_id as string, activityTimeout: established.data.activity_timeout as number };
}

/** The auth endpoint's signature (and the grant it records) for a tenant's session. */
async function authorize(socketId: string, channel: string, tenant: { token: string }) {
  const res = await fetch(`${ctx.baseUrl}/api/broadcasting/auth`, {
    method: "POST",
    headers: { authorization: `Bearer ${tenant.token}`, "content-type": "application/json" },
    body: JSON.stringify({ socket_id: socketId, channel_name: channel }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { auth: string }).auth;
}

/** The connection still works: a ping is answered. */
async function expectAlive(raw: Awaited<ReturnType<typeof openRaw>>) {
  raw.send({ event: "pusher:ping", data: {} });
  await raw.event("pusher:pong");
}

describe("Pusher protocol 7 over a bare WebSocket", () => {
  test("connection_established carries a Pusher-style socket_id and the activity timeout", async () => {
    const { raw, socketId, activityTimeout } = await connect();
    expect(socketId).toMatch(/^\d+\.\d+$/);
    expect(activityTimeout).toBe(120);
    await expectAlive(raw);
    raw.ws.close();
  });

  test("malformed frames and unknown events: pusher:error, the connection stays", async () => {
    const { raw } = await connect();
    for (const bad of ["not json", "[1,2]", '{"data":{}}', '{"event":""}']) {
      raw.send(bad);
      const err = await raw.event("pusher:error");
      expect(err.data.message).toMatch(/^Malformed message/);
    }
    raw.send({ event: "pusher:teleport", data: {} });
    expect((await raw.event("pusher:error")).data.message).toContain("Unknown event");
    raw.send({ event: "client-typing", channel: "private-organization.1", data: {} });
    expect((await raw.event("pusher:error")).data.code).toBe(4301);
    raw.ws.send(new Uint8Array([0xff, 0x00, 0x12]));
    expect((await raw.event("pusher:error")).data.message).toMatch(/^Malformed/);
    await expectAlive(raw);
    raw.ws.close();
  });

  test("oversized messages: pusher:error up to the transport limit, close 1009 beyond it; others keep being served", async () => {
    const bystander = await connect();
    const { raw } = await connect();
    raw.send({ event: "pusher:ping", data: { pad: "x".repeat(20 * 1024) } });
    expect((await raw.event("pusher:error")).data.code).toBe(4302);
    await expectAlive(raw);
    raw.send({ event: "pusher:ping", data: { pad: "x".repeat(100 * 1024) } });
    expect((await raw.closed()).code).toBe(1009);
    await expectAlive(bystander.raw);
    bystander.raw.ws.close();
  });

  test("subscribing without auth, with a wrong signature, or to a public channel: subscription_error, connection kept", async () => {
    const tenant = await createTenant(ctx.sql);
    const { org } = tenant;
    const { raw, socketId } = await connect();
    const channel = `private-organization.${org.id}`;
    raw.send({ event: "pusher:subscribe", data: { channel } });
    let err = await raw.event("pusher:subscription_error");
    expect(err.channel).toBe(channel);
    expect(err.data).toMatchObject({ type: "AuthError", status: 401 });
    expect(typeof err.data.error).toBe("string");
    // A signature made for another socket does not transfer.
    raw.send({ event: "pusher:subscribe", data: { channel, auth: await authorize("1.1", channel, tenant) } });
    expect((await raw.event("pusher:subscription_error")).data.status).toBe(401);
    raw.send({ event: "pusher:subscribe", data: { channel: "news" } });
    err = await raw.event("pusher:subscription_error");
    expect(err).toMatchObject({ channel: "news", data: { type: "AuthError", status: 403 } });
    raw.send({ event: "pusher:subscribe", data: { channel, auth: await authorize(socketId, channel, tenant) } });
    expect((await raw.event("pusher_internal:subscription_succeeded")).channel).toBe(channel);
    await raiseEvents(ctx.services, [events.deviceUpdated({ organizationId: org.id, deviceId: 1 }, { device_id: 1, config_version: 2 } as never)]);
    const event = await raw.event("device.updated");
    expect(event).toMatchObject({ channel, data: { device_id: 1, config_version: 2 } });
    raw.ws.close();
  });

  test("unsubscribe stops delivery; subscribing again takes a new authorization", async () => {
    const tenant = await createTenant(ctx.sql);
    const { org } = tenant;
    const { raw, socketId } = await connect();
    const a = `private-organization.${org.id}`;
    const [team] = await ctx.sql<{ id: number }[]>`insert into teams (organization_id, name) values (${org.id}, 't') returning id`;
    const b = `private-team.${team!.id}`;
    for (const channel of [a, b]) {
      raw.send({ event: "pusher:subscribe", data: { channel, auth: await authorize(socketId, channel, tenant) } });
      await raw.next((f) => f.event === "pusher_internal:subscription_succeeded" && f.channel === channel);
    }
    raw.send({ event: "pusher:unsubscribe", data: { channel: a } });
    await expectAlive(raw); // the unsubscribe was handled before the pong
    // One event on both channels (the organization's and the team's): only the team's copy arrives.
    await raiseEvents(ctx.services, [events.messageReceived({ organizationId: org.id, teamId: team!.id }, { n: 2 } as never)]);
    const got = await raw.event("message.received");
    expect(got).toMatchObject({ channel: b, data: { n: 2 } });
    // Subscribing again takes a new authorization (as pusher-js asks for one on every subscribe):
    // a loop of subscribe and unsubscribe on one grant made a database check per frame.
    const once = await authorize(socketId, a, tenant);
    raw.send({ event: "pusher:subscribe", data: { channel: a, auth: once } });
    await raw.next((f) => f.event === "pusher_internal:subscription_succeeded" && f.channel === a);
    raw.send({ event: "pusher:unsubscribe", data: { channel: a } });
    raw.send({ event: "pusher:subscribe", data: { channel: a, auth: once } });
    expect(await raw.next((f) => f.channel === a)).toMatchObject({ event: "pusher:subscription_error", data: { status: 401 } });
    raw.send({ event: "pusher:subscribe", data: { channel: a, auth: await authorize(socketId, a, tenant) } });
    await raw.next((f) => f.event === "pusher_internal:subscription_succeeded" && f.channel === a);
    raw.ws.close();
  });

  test("per-connection subscription limit: LimitReached, earlier subscriptions unaffected", async () => {
    const limits = ctx.services.realtime.limits;
    const before = limits.maxSubscriptionsPerConnection;
    limits.maxSubscriptionsPerConnection = 2;
    try {
      const tenants = await Promise.all([1, 2, 3].map(() => createTenant(ctx.sql)));
      const { raw, socketId } = await connect();
      for (const [i, t] of tenants.entries()) {
        const channel = `private-organization.${t.org.id}`;
        raw.send({ event: "pusher:subscribe", data: { channel, auth: await authorize(socketId, channel, t) } });
        const answer = await raw.next((f) => f.channel === channel);
        if (i < 2) expect(answer.event).toBe("pusher_internal:subscription_succeeded");
        else expect(answer).toMatchObject({ event: "pusher:subscription_error", data: { type: "LimitReached", status: 429 } });
      }
      raw.ws.close();
    } finally {
      limits.maxSubscriptionsPerConnection = before;
    }
  });

  test("a silent client gets pusher:ping and is closed with 4201 when it does not answer", async () => {
    const limits = ctx.services.realtime.limits;
    const saved = { ...limits };
    const { raw } = await connect();
    Object.assign(limits, { idleSeconds: 0, pongTimeoutSeconds: 0 });
    try {
      ctx.services.realtime.sweep();
      await raw.event("pusher:ping");
      ctx.services.realtime.sweep();
      expect((await raw.closed()).code).toBe(4201);
    } finally {
      Object.assign(limits, saved);
    }
  });

  test("/metrics counts connections and messages", async () => {
    const { raw } = await connect();
    await expectAlive(raw);
    const text = await (await fetch(`${ctx.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const connections = Number(/^simhost_ws_connections (\d+)/m.exec(text)?.[1]);
    expect(connections).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^simhost_ws_messages_total\{direction="in"\} [1-9]/m);
    raw.ws.close();
  });

  test("over the connection quota, of the server or of one address: pusher:error and close 4004; no ?protocol= is taken as 7; a non-numeric one is 4006", async () => {
    const limits = ctx.services.realtime.limits;
    const saved = limits.maxConnections;
    limits.maxConnections = 0;
    try {
      const refused = await openRaw(url);
      expect((await refused.event("pusher:error")).data.code).toBe(4004);
      expect((await refused.closed()).code).toBe(4004);
    } finally {
      limits.maxConnections = saved;
    }
    // One address's connections are capped too; a closed one frees its place.
    limits.maxConnectionsPerAddress = 2;
    try {
      const [a, b] = [await connect(), await connect()];
      const third = await openRaw(url);
      expect((await third.event("pusher:error")).data).toEqual({ code: 4004, message: "Over connection quota for this address." });
      expect((await third.closed()).code).toBe(4004);
      a.raw.ws.close();
      await a.raw.closed();
      const again = await openRaw(url);
      await again.event("pusher:connection_established");
      again.ws.close();
      b.raw.ws.close();
    } finally {
      limits.maxConnectionsPerAddress = 1000;
    }
    const bare = await openRaw(url.split("?")[0]!);
    await bare.event("pusher:connection_established");
    bare.ws.close();
    const bad = await openRaw(url.replace("protocol=7", "protocol=seven"));
    expect((await bad.closed()).code).toBe(4006);
  });

  test("unsupported protocol version: 4007", async () => {
    const raw = await openRaw(url.replace("protocol=7", "protocol=99"));
    expect((await raw.event("pusher:error")).data.code).toBe(4007);
    expect((await raw.closed()).code).toBe(4007);
  });

  test("a client 1 MiB behind is disconnected at once, never handed an event after one it missed: ?after= its last event_id gives it the rest", async () => {
    const tenant = await createTenant(ctx.sql);
    const channel = `private-organization.${tenant.org.id}`;
    const slow = await stalledClient(ctx.port, new URL(url).pathname + new URL(url).search);
    slow.send({ event: "pusher:subscribe", data: { channel, auth: await authorize(slow.socketId, channel, tenant) } });
    await slow.waitFor("pusher_internal:subscription_succeeded");
    slow.socket.pause(); // from here on the kernel buffers fill and the server's queue grows
    const before = ctx.services.realtime.connections();
    const total = 3000;
    // The hub hands events to the sockets in log order: once it delivers the marker, every event
    // before it has been handed to the sockets.
    const delivered = awaitCallback(
      "the marker event",
      (done) => {
        const stop = ctx.services.realtime.watch((m) => {
          if (m.event !== "number.unlocked") return;
          stop();
          done(undefined);
        });
      },
      30_000,
    ); // 30 MB of events go through the log first
    const rows = Array.from({ length: total }, (_, n) => events.deviceUpdated({ organizationId: tenant.org.id }, { n, pad: "x".repeat(10_000) } as never));
    await raiseEvents(ctx.services, [...rows, events.numberUnlocked({ organizationId: tenant.org.id }, {} as never)]);
    await delivered;
    // Closed by the limit itself, no sweep needed.
    expect(ctx.services.realtime.connections()).toBe(before - 1);
    const closed = awaitCallback("the slow client's socket to close", (done) => slow.socket.once("close", () => done(undefined)));
    slow.socket.resume();
    await closed;
    // What it received: events 0..k-1, each once, in order, no hole, and not all of them.
    const seen = [...slow.text().matchAll(/\\"n\\":(\d+),\\"pad\\":\\"x+\\",\\"event_id\\":\\"([\w-]+)\\"/g)].map((m) => ({ n: Number(m[1]), id: m[2]! }));
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.length).toBeLessThan(total);
    expect(seen.map((e) => e.n)).toEqual(seen.map((_, i) => i));
    // The documented catch-up from the last event it saw: every later event, none missing.
    const rest: number[] = [];
    for (let after = seen.at(-1)!.id; ; ) {
      const res = await fetch(`${ctx.baseUrl}/api/events?after=${after}&per_page=500&type=device.updated`, {
        headers: { authorization: `Bearer ${tenant.token}` },
      });
      const page = (await res.json()) as { data: { data: { n: number } }[]; meta: { next_cursor: string; has_more: boolean } };
      rest.push(...page.data.map((e) => e.data.n));
      after = page.meta.next_cursor;
      if (!page.meta.has_more) break;
    }
    expect(rest).toEqual(Array.from({ length: total - seen.length }, (_, i) => seen.length + i));
  }, 60_000);

  test("a client that stays behind at two sweeps is closed with 4100, counted, and cut at the next", async () => {
    const tenant = await createTenant(ctx.sql);
    const channel = `private-organization.${tenant.org.id}`;
    const slow = await stalledClient(ctx.port, new URL(url).pathname + new URL(url).search);
    slow.send({ event: "pusher:subscribe", data: { channel, auth: await authorize(slow.socketId, channel, tenant) } });
    await slow.waitFor("pusher_internal:subscription_succeeded");
    slow.socket.pause();
    const before = ctx.services.realtime.connections();
    // The sweep's own count, not the number of connections: another test's socket closing late
    // ended the loop early once, with nothing closed as slow yet.
    const slowClosed = async () => (await ctx.services.metrics.registry.getSingleMetric("simhost_ws_slow_clients_closed_total")!.get()).values[0]?.value ?? 0;
    const closedBefore = await slowClosed();
    const limits = ctx.services.realtime.limits;
    const slowBytes = limits.slowClientBytes;
    // Behind by a little (far below the 1 MiB limit) counts as slow here.
    limits.slowClientBytes = 1024;
    try {
      const row = events.deviceUpdated({ organizationId: tenant.org.id }, { pad: "x".repeat(10_000) } as never);
      // Batches of 100 KB until the kernel's buffers are full and the server's queue holds some:
      // two sweeps in a row then find it behind.
      for (let i = 0; i < 300 && (await slowClosed()) === closedBefore; i++) {
        await raiseEvents(
          ctx.services,
          Array.from({ length: 10 }, () => row),
        );
        ctx.services.realtime.sweep();
        ctx.services.realtime.sweep();
      }
    } finally {
      limits.slowClientBytes = slowBytes;
    }
    expect(await slowClosed()).toBe(closedBefore + 1);
    expect(ctx.services.realtime.connections()).toBeLessThan(before);
    const metrics = await (await fetch(`${ctx.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(metrics).toMatch(/^simhost_ws_slow_clients_closed_total [1-9]/m);
    const closed = awaitCallback("the slow client's socket to close", (done) => slow.socket.once("close", () => done(undefined)));
    slow.socket.resume();
    await closed;
    // Its close frame (opcode 8) with 4100, after what was queued before it.
    expect(slow.text()).toContain("\x88");
    expect(slow.text()).toContain("Client too slow");
  }, 60_000);

  // Last: it stops this server's realtime for good.
  test("graceful shutdown closes sockets with 4200 (reconnect now) and turns new ones away the same way", async () => {
    const raw = await openRaw(url);
    await raw.event("pusher:connection_established");
    ctx.services.realtime.shutdown();
    expect((await raw.closed()).code).toBe(4200);
    const late = await openRaw(url);
    expect((await late.closed()).code).toBe(4200);
  });
});
