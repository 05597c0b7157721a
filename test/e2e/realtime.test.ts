import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type Pusher from "pusher-js";
import { event } from "../../server/events/catalog";
import { storeInboundMessage } from "../../server/messages/inbound";
import { signChannel } from "../../server/realtime/protocol";
import { createApiKey, createTenant } from "../fixtures";
import { logRows, raiseEvents } from "../fixtures-events";
import type { TestContext } from "../helpers";
import { awaitCallback, type ConnectionDetails, connected, connectPusher, openRaw, startServer, stopServer, subscribed } from "./realtime-client";

let ctx: TestContext & { baseUrl: string };
let details: ConnectionDetails;
const clients: Pusher[] = [];

beforeAll(async () => {
  ctx = await startServer();
  ctx.services.start(); // job workers: message.received comes from the fan-out job
  const { token } = await createTenant(ctx.sql);
  const res = await fetch(`${ctx.baseUrl}/api/broadcasting/connection`, { headers: { authorization: `Bearer ${token}` } });
  details = (await res.json()) as ConnectionDetails;
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await stopServer(ctx);
});

function pusherFor(token: string) {
  const p = connectPusher(ctx.baseUrl, details, token);
  clients.push(p);
  return p;
}

/** A device event's payload: the device online and active. */
const devicePayload = (deviceId: number, organizationId: number) => ({
  device_id: deviceId,
  organization_id: organizationId,
  status: "active",
  is_online: true,
  last_seen_at: null,
  changed_at: new Date().toISOString(),
  config_version: 1,
});

async function attachNumber(orgIds: number[]) {
  const number = `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
  const [sim] = await ctx.sql<{ id: number }[]>`
    insert into hosted_sims (number, provider, type, shared_max_orgs) values (${number}, 'test', 'shared', 5) returning id`;
  for (const org of orgIds) await ctx.sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${sim!.id}, ${org})`;
  return sim!.id;
}

describe("GET /api/broadcasting/connection", () => {
  test("SPEC.md 2.13 details from PUBLIC_URL; an API key needs no permission", async () => {
    const { org } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, []);
    const res = await ctx.request("GET", "/api/broadcasting/connection", { token: key.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      broadcaster: "pusher",
      key: ctx.services.realtime.credentials.key,
      ws_url: `ws://127.0.0.1:${ctx.config.PORT}/app/${ctx.services.realtime.credentials.key}`,
      ws_host: "127.0.0.1",
      ws_port: ctx.config.PORT,
      ws_scheme: "ws",
      force_tls: false,
      auth_method: "bearer_token",
      auth_header: "Authorization: Bearer <token>",
      auth_endpoint: "/api/broadcasting/auth",
    });
  });

  test("no token: 401", async () => {
    const res = await ctx.request("GET", "/api/broadcasting/connection");
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("unauthenticated");
  });
});

describe("pusher-js against the server", () => {
  test("connects, authorizes with a bearer token, receives device.status_changed", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const pusher = pusherFor(token);
    await connected(pusher);
    const channel = await subscribed(pusher, `private-organization.${org.id}`);
    const received = awaitCallback<any>("device.status_changed", (done) => channel.bind("device.status_changed", done));
    const payload = devicePayload(7, org.id);
    await raiseEvents(ctx.services, [event.deviceOnline({ organizationId: org.id, deviceId: 7 }, payload)]);
    const [row] = await logRows(ctx.services, [org.id], undefined, 1);
    // The realtime payload is the log's payload plus its cursor.
    expect(await received).toEqual({ ...payload, event_id: row!.cursor });
  });

  test("message.received from a stored inbound SMS, on the organization and number channels", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const simId = await attachNumber([org.id]);
    const pusher = pusherFor(token);
    const orgChannel = await subscribed(pusher, `private-organization.${org.id}`);
    const numberChannel = await subscribed(pusher, `private-number.${simId}`);
    const onOrg = awaitCallback<any>("message.received on org", (done) => orgChannel.bind("message.received", done));
    const onNumber = awaitCallback<any>("message.received on number", (done) => numberChannel.bind("message.received", done));
    await ctx.sql.begin((tx) =>
      storeInboundMessage(tx, { hostedSimId: simId, from: "+15550001111", text: "hello realtime", source: "provider", receivedAt: new Date() }),
    );
    ctx.services.events.notify();
    const [a, b] = await Promise.all([onOrg, onNumber]);
    expect(a.message.text).toBe("hello realtime");
    expect(a.message.hosted_sim_id).toBe(simId);
    expect(b.message.id).toBe(a.message.id);
  });

  test("a shared number: a message visible to one organization never reaches the other's subscription", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const simId = await attachNumber([a.org.id, b.org.id]);
    const pa = pusherFor(a.token);
    const pb = pusherFor(b.token);
    const chA = await subscribed(pa, `private-number.${simId}`);
    const chB = await subscribed(pb, `private-number.${simId}`);
    const seenByB: any[] = [];
    chB.bind("message.received", (d: any) => seenByB.push(d));
    const toA = awaitCallback<any>("A's event", (done) => chA.bind("message.received", done));
    const received = (id: number, text: string, org: number) =>
      event.messageReceived({ organizationId: org, hostedSimId: simId }, {
        message: { id, text },
        hosted_sim: { id: simId, number: "+1", alias: null },
        team: null,
      } as never);
    await raiseEvents(ctx.services, [received(1, "for A only", a.org.id)]);
    // Then one for both: B receiving it proves B's socket was live when A's passed by.
    const toB = awaitCallback<any>("B's event", (done) => chB.bind("message.received", done));
    await raiseEvents(ctx.services, [received(2, "for both", a.org.id), received(2, "for both", b.org.id)]);
    expect((await toA).message.id).toBe(1);
    expect((await toB).message.id).toBe(2);
    expect(seenByB.map((d) => d.message.id)).toEqual([2]);
  });

  test("an API key's subscription receives the events its permissions read, as GET /api/events does: message.* with messages.read, device.* with numbers.read", async () => {
    const { org } = await createTenant(ctx.sql);
    const online = event.deviceOnline({ organizationId: org.id, deviceId: 9 }, devicePayload(9, org.id));
    const received = event.messageReceived({ organizationId: org.id, hostedSimId: 1 }, {
      message: { id: 1, text: "Your code is 777111" },
      hosted_sim: { id: 1, number: "+1", alias: null },
      team: null,
    } as never);
    // Each key is sent the event it may not read first, then the one it may: the second arriving
    // alone proves the first was not sent (one socket's events arrive in log order).
    for (const [permission, [refused, allowed], [other, name]] of [
      ["numbers.read", [received, online], ["message.received", "device.status_changed"]],
      ["messages.read", [online, received], ["device.status_changed", "message.received"]],
    ] as const) {
      const { key } = await createApiKey(ctx.sql, org.id, [permission]);
      const channel = await subscribed(pusherFor(key), `private-organization.${org.id}`);
      const seen: string[] = [];
      channel.bind(other, () => seen.push(other));
      const got = awaitCallback<any>(`${name} for a key holding ${permission}`, (done) => channel.bind(name, done));
      await raiseEvents(ctx.services, [refused, allowed]);
      await got;
      expect([permission, seen]).toEqual([permission, []]);
    }
  });

  test("told to reconnect (4200), pusher-js reconnects at once, resubscribes and keeps receiving", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const pusher = pusherFor(token);
    const firstId = await connected(pusher);
    const channel = await subscribed(pusher, `private-organization.${org.id}`);
    const resubscribed = awaitCallback("resubscription", (done) => channel.bind("pusher:subscription_succeeded", () => done(undefined)));
    ctx.services.realtime.reconnectAll();
    await resubscribed;
    expect(pusher.connection.socket_id).not.toBe(firstId);
    const received = awaitCallback<any>("event after reconnecting", (done) => channel.bind("number.unlocked", done));
    await raiseEvents(ctx.services, [
      event.numberUnlocked({ organizationId: org.id }, { hosted_sim_id: 1, number: "+15550000001", locked: false, lock: null, reason: "unlock" }),
    ]);
    expect((await received).reason).toBe("unlock");
  });

  test("a client of another organization is refused the channel", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const pusher = pusherFor(b.token);
    await connected(pusher);
    const err = await subscribed(pusher, `private-organization.${a.org.id}`).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.data.status).toBe(403);
  });
});

describe("POST /api/broadcasting/auth", () => {
  const socketId = "123.456";

  test("signs socket_id:channel_name with the app secret (form or JSON), with CORS headers", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const channel = `private-organization.${org.id}`;
    const { key, secret } = ctx.services.realtime.credentials;
    const form = await ctx.request("POST", "/api/broadcasting/auth", { token, form: { socket_id: socketId, channel_name: channel } });
    expect(form.status).toBe(200);
    expect(form.body).toEqual({ auth: signChannel(key, secret, socketId, channel) });
    expect(form.headers.get("access-control-allow-origin")).toBe("*");
    const json = await ctx.request("POST", "/api/broadcasting/auth", { token, body: { socket_id: socketId, channel_name: channel } });
    expect(json.body).toEqual(form.body);
  });

  test("CORS preflight answers 204 with the allowed headers; refusals carry CORS too", async () => {
    const pre = await ctx.request("OPTIONS", "/api/broadcasting/auth", {
      headers: { origin: "chrome-extension://abc", "access-control-request-method": "POST" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-headers")).toContain("Authorization");
    const res = await ctx.request("POST", "/api/broadcasting/auth", { form: { socket_id: socketId, channel_name: "private-organization.1" } });
    expect(res.status).toBe(401);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const { token } = await createTenant(ctx.sql);
    for (const [body, status] of [
      ["{not json", 400],
      [{ socket_id: "x" }, 422],
      [{ socket_id: socketId, channel_name: "private-organization.999999999" }, 403],
    ] as const) {
      const bad = await ctx.request("POST", "/api/broadcasting/auth", { token, body });
      expect(bad.status).toBe(status);
      expect(bad.headers.get("access-control-allow-origin")).toBe("*");
    }
  });

  test("users: their teams, devices and numbers; not others'; public channels never", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const [team] = await ctx.sql<{ id: number }[]>`insert into teams (organization_id, name) values (${a.org.id}, 'ops') returning id`;
    const [device] = await ctx.sql<{ id: number }[]>`
      insert into devices (organization_id, android_id, device_model, app_version) values (${a.org.id}, '0123456789abcdef', 'Pixel', '1.0') returning id`;
    const simId = await attachNumber([a.org.id]);
    const auth = (token: string, channel_name: string) => ctx.request("POST", "/api/broadcasting/auth", { token, form: { socket_id: socketId, channel_name } });
    for (const ch of [`private-team.${team!.id}`, `private-device.${device!.id}`, `private-number.${simId}`, `private-organization.${a.org.id}`]) {
      expect((await auth(a.token, ch)).status).toBe(200);
      const refused = await auth(b.token, ch);
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe("permission_denied");
    }
    expect((await auth(a.token, "public-news")).status).toBe(403);
    expect((await auth(a.token, "presence-organization.1")).status).toBe(403);
  });

  test("API keys: their own organization channel only", async () => {
    const { org } = await createTenant(ctx.sql);
    const { key } = await createApiKey(ctx.sql, org.id, []);
    const [team] = await ctx.sql<{ id: number }[]>`insert into teams (organization_id, name) values (${org.id}, 'ops') returning id`;
    const auth = (channel_name: string) => ctx.request("POST", "/api/broadcasting/auth", { token: key, form: { socket_id: socketId, channel_name } });
    expect((await auth(`private-organization.${org.id}`)).status).toBe(200);
    expect((await auth(`private-team.${team!.id}`)).status).toBe(403);
    expect((await auth(`private-organization.${org.id + 1}`)).status).toBe(403);
  });

  test("missing or malformed socket_id / channel_name: 422", async () => {
    const { token } = await createTenant(ctx.sql);
    const res = await ctx.request("POST", "/api/broadcasting/auth", { token, form: { socket_id: "abc", channel_name: "" } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
    expect(Object.keys(res.body.errors).sort()).toEqual(["channel_name", "socket_id"]);
    // Without a valid token the same body is 401: the caller is decided before the body is read.
    for (const token of [undefined, "st_not-a-token"]) {
      const refused = await ctx.request("POST", "/api/broadcasting/auth", { token, form: { socket_id: "abc", channel_name: "" } });
      expect([refused.status, refused.body.code, refused.headers.get("access-control-allow-origin")]).toEqual([401, "unauthenticated", "*"]);
    }
  });
});

describe("the WebSocket endpoint", () => {
  test("unknown app key: pusher:error 4001 and close 4001", async () => {
    const raw = await openRaw(`ws://127.0.0.1:${ctx.config.PORT}/app/nope?protocol=7`);
    const err = await raw.event("pusher:error");
    expect(err.data.code).toBe(4001);
    expect((await raw.closed()).code).toBe(4001);
  });

  test("plain HTTP on /app/{key}: 426 with the error shape", async () => {
    const res = await fetch(`${ctx.baseUrl}/app/${details.key}`);
    expect(res.status).toBe(426);
    expect(((await res.json()) as { code: string }).code).toBe("upgrade_required");
  });
});
