import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type Pusher from "pusher-js";
import { randomString } from "../../server/lib/crypto";
import { storeInboundMessage } from "../../server/messages/inbound";
import { createApiKey, createTenant } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import { type Instance, spawnInstance } from "./instances";
import { awaitCallback, type ConnectionDetails, connected, connectPusher, openRaw, subscribed } from "./realtime-client";

const enabled = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);
if (!enabled) console.warn("realtime-cluster: skipped (set DATABASE_URL and REDIS_URL: two server processes need a shared PostgreSQL and Redis)");

let ctx: TestContext;
let a: Instance;
let b: Instance;
const clients: Pusher[] = [];

describe.skipIf(!enabled)("two server instances on one PostgreSQL and Redis", () => {
  beforeAll(async () => {
    ctx = await createTestContext();
    const shared = {
      DATABASE_URL: ctx.config.DATABASE_URL!,
      REDIS_URL: process.env.REDIS_URL!,
      REDIS_PREFIX: `simhost-test-${randomString(8)}:`,
      PUSHER_APP_KEY: ctx.services.realtime.credentials.key,
      PUSHER_APP_SECRET: ctx.services.realtime.credentials.secret,
      // Devices go offline 2 s after their last heartbeat on any instance.
      OFFLINE_AFTER_SECONDS: "2",
      HEARTBEAT_SECONDS: "1",
    };
    // Only A runs jobs: whatever the fan-out job publishes is raised on A.
    [a, b] = await Promise.all([spawnInstance({ ...shared, WORKERS: "2" }), spawnInstance({ ...shared, WORKERS: "0" })]);
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) c.disconnect();
    for (const i of [a, b]) i?.proc.kill("SIGTERM");
    await Promise.all([a?.proc.exited, b?.proc.exited]);
    await ctx?.close();
  }, 30_000);

  test("a pusher-js client on B receives message.received raised on A", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const [sim] = await ctx.sql<{ id: number }[]>`
      insert into hosted_sims (number, provider, type, shared_max_orgs)
      values (${`+1666${String(Date.now()).slice(-7)}`}, 'test', 'shared', 5) returning id`;
    await ctx.sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${sim!.id}, ${org.id})`;
    const details = (await (
      await fetch(`${b.baseUrl}/api/broadcasting/connection`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as ConnectionDetails;
    expect(details.ws_port).toBe(b.port);
    // Authorized by A, subscribed on B: the grant travels through Redis.
    const pusher = connectPusher(a.baseUrl, details, token);
    clients.push(pusher);
    await connected(pusher);
    const orgChannel = await subscribed(pusher, `private-organization.${org.id}`);
    const numberChannel = await subscribed(pusher, `private-number.${sim!.id}`);
    const onOrg = awaitCallback<any>("message.received on the organization channel", (done) => orgChannel.bind("message.received", done), 10_000);
    const onNumber = awaitCallback<any>("message.received on the number channel", (done) => numberChannel.bind("message.received", done), 10_000);
    const all: any[] = [];
    orgChannel.bind("message.received", (e: any) => all.push(e));
    await ctx.sql.begin((tx) =>
      storeInboundMessage(tx, { hostedSimId: sim!.id, from: "+15550002222", text: "across instances", source: "provider", receivedAt: new Date() }),
    );
    const [x, y] = await Promise.all([onOrg, onNumber]);
    expect(x.message.text).toBe("across instances");
    expect(y.message.id).toBe(x.message.id);
    // Both copies carry the log row's cursor.
    expect(x.event_id).toMatch(/^evt_/);
    expect(y.event_id).toBe(x.event_id);
    // Each instance reads the log itself and nothing goes through Redis pub/sub as well: once a
    // second message arrived, the first was delivered exactly once.
    const second = awaitCallback<any>(
      "the second message",
      (done) => orgChannel.bind("message.received", (e: any) => e.message.text === "second" && done(e)),
      10_000,
    );
    await ctx.sql.begin((tx) =>
      storeInboundMessage(tx, { hostedSimId: sim!.id, from: "+15550002222", text: "second", source: "provider", receivedAt: new Date() }),
    );
    await second;
    expect(all.map((e) => e.message.text)).toEqual(["across instances", "second"]);
  }, 30_000);

  test("a number shared by two organizations: a message that arrived under A's lock never reaches B's client on B", async () => {
    const tenantA = await createTenant(ctx.sql);
    const tenantB = await createTenant(ctx.sql);
    const [sim] = await ctx.sql<{ id: number }[]>`
      insert into hosted_sims (number, provider, type, shared_max_orgs)
      values (${`+1667${String(Date.now()).slice(-7)}`}, 'test', 'shared', 5) returning id`;
    for (const t of [tenantA, tenantB]) {
      await ctx.sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${sim!.id}, ${t.org.id})`;
    }
    const channelName = `private-number.${sim!.id}`;
    const join = async (token: string, authVia: Instance) => {
      const details = (await (
        await fetch(`${b.baseUrl}/api/broadcasting/connection`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as ConnectionDetails;
      const pusher = connectPusher(authVia.baseUrl, details, token);
      clients.push(pusher);
      return subscribed(pusher, channelName);
    };
    const [chA, chB] = await Promise.all([join(tenantA.token, a), join(tenantB.token, b)]);
    const textsB: string[] = [];
    chB.bind("message.received", (e: any) => textsB.push(e.message.text));
    const store = (text: string) =>
      ctx.sql.begin((tx) => storeInboundMessage(tx, { hostedSimId: sim!.id, from: "+15550003333", text, source: "provider", receivedAt: new Date() }));

    await ctx.sql`update hosted_sims set lock_organization_id = ${tenantA.org.id}, locked_until = now() + interval '10 minutes' where id = ${sim!.id}`;
    const lockedSeenByA = awaitCallback<any>(
      "A's locked message",
      (done) => chA.bind("message.received", (e: any) => e.message.text === "under lock" && done(e)),
      10_000,
    );
    await store("under lock");
    await lockedSeenByA;
    await ctx.sql`update hosted_sims set lock_organization_id = null, locked_until = null where id = ${sim!.id}`;
    const openSeenByB = awaitCallback<any>(
      "the open message on B",
      (done) => chB.bind("message.received", (e: any) => e.message.text === "open" && done(e)),
      10_000,
    );
    await store("open");
    await openSeenByB;
    expect(textsB).toEqual(["open"]);
  }, 30_000);

  test("heartbeats alternating between A and B: exactly one online and one offline event per spell, seen on B", async () => {
    const { token } = await createTenant(ctx.sql);
    const call = async (instance: Instance, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${instance.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const registered = await call(a, "POST", "/api/byos/devices/register", {
      android_id: randomBytes(8).toString("hex"),
      sim_slots: [1],
      device_model: "Pixel 8",
      app_version: "1.0.0",
    });
    expect(registered.status).toBe(201);
    const deviceId: number = registered.body.id ?? registered.body.data?.id;
    const details = (await call(b, "GET", "/api/broadcasting/connection")).body as ConnectionDetails;
    const pusher = connectPusher(b.baseUrl, details, token);
    clients.push(pusher);
    const channel = await subscribed(pusher, `private-device.${deviceId}`);
    const seen: boolean[] = [];
    const waiters: { online: boolean; done: () => void }[] = [];
    channel.bind("device.status_changed", (e: any) => {
      seen.push(e.is_online);
      const i = waiters.findIndex((w) => w.online === e.is_online);
      if (i >= 0) waiters.splice(i, 1)[0]!.done();
    });
    const next = (online: boolean) => awaitCallback(online ? "online" : "offline", (done) => waiters.push({ online, done: () => done(undefined) }), 10_000);
    const heartbeat = async (instance: Instance) => expect((await call(instance, "POST", `/api/byos/devices/${deviceId}/heartbeat`, {})).status).toBe(200);

    for (const spell of [1, 2]) {
      const online = next(true);
      for (const instance of [a, b, a, b]) await heartbeat(instance);
      await online;
      await next(false); // no heartbeat on either instance for 2 s
      expect(seen).toEqual(spell === 1 ? [true, false] : [true, false, true, false]);
    }
    // A late duplicate from the losing instance would land before this last online event.
    const back = next(true);
    await heartbeat(b);
    await back;
    expect(seen).toEqual([true, false, true, false, true]);
  }, 60_000);

  test("an API key deleted through A ends its subscription on B (4009); the owner's on B keeps receiving", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, []);
    const details = (await (
      await fetch(`${b.baseUrl}/api/broadcasting/connection`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as ConnectionDetails;
    const channelName = `private-organization.${org.id}`;
    const join = async (t: string) => {
      const pusher = connectPusher(b.baseUrl, details, t);
      clients.push(pusher);
      return { pusher, channel: await subscribed(pusher, channelName) };
    };
    const byKey = await join(key.key);
    const owner = await join(token);
    const codes: number[] = [];
    byKey.pusher.connection.bind("error", (e: any) => codes.push(e?.data?.code));
    const ended = awaitCallback("B's socket to end", (done) =>
      byKey.pusher.connection.bind("state_change", (s: { current: string }) => s.current === "disconnected" && done(undefined)),
    );
    const res = await fetch(`${a.baseUrl}/api/api-keys/${key.id}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(204);
    await ended;
    expect(codes).toContain(4009);
    expect(byKey.channel.subscribed).toBe(false);
    const seen = awaitCallback("the owner's event", (done) => owner.channel.bind("message.received", done), 10_000);
    await ctx.sql.begin(async (tx) => {
      const [sim] = await tx<{ id: number }[]>`
        insert into hosted_sims (number, provider, type, shared_max_orgs)
        values (${`+1668${String(Date.now()).slice(-7)}`}, 'test', 'shared', 5) returning id`;
      await tx`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${sim!.id}, ${org.id})`;
      await storeInboundMessage(tx, { hostedSimId: sim!.id, from: "+15550004444", text: "after the key", source: "provider", receivedAt: new Date() });
    });
    expect(((await seen) as any).message.text).toBe("after the key");
  }, 30_000);

  test("SIGTERM closes an instance's sockets with 4200 so clients reconnect at once elsewhere", async () => {
    const raw = await openRaw(`ws://127.0.0.1:${b.port}/app/${ctx.services.realtime.credentials.key}?protocol=7`);
    await raw.event("pusher:connection_established");
    b.proc.kill("SIGTERM");
    expect((await raw.closed(10_000)).code).toBe(4200);
    expect(await b.proc.exited).toBe(0);
  }, 30_000);
});
