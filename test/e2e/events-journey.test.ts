import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type Pusher from "pusher-js";
import { Webhook } from "standardwebhooks";
import { createTenant } from "../fixtures";
import { activeDevice } from "../fixtures-devices";
import { createByosNumber, createSharedNumber, createTeam, eventually } from "../fixtures-numbers";
import type { TestContext } from "../helpers";
import { type ConnectionDetails, connected, connectPusher, startServer, stopServer, subscribed } from "./realtime-client";

/**
 * One journey per event type: raised by its real cause (an API call, a provider callback, a
 * device's heartbeat and status report, a deadline passing), then
 * seen exactly once in GET /api/events, once on a Standard Webhooks receiver (integration with
 * event_types ["*"]) and once on a pusher-js client of private-organization.{orgId}, with the same payload.
 */
const ROOT = join(import.meta.dir, "../..");

type Listed = { id: string; type: string; created_at: string; organization_id: number; data: Record<string, any> };
type Delivered = { headers: Record<string, string>; body: { id: string; type: string; created_at: string; data: Record<string, any> } };
type Live = { event: string; data: Record<string, any> };

let ctx: TestContext & { baseUrl: string };
let tenant: Awaited<ReturnType<typeof createTenant>>;
let team: { id: number };
let receiver: ReturnType<typeof Bun.serve>;
const delivered: Delivered[] = [];
let badSignatures = 0;
let pusher: Pusher;
const live: Live[] = [];
/** Each row's event id, by type, for the final check of duplicates. */
const seen = new Map<string, string>();

beforeAll(async () => {
  // Short deadlines instead of waiting for the defaults: offline after 1 s without a heartbeat.
  ctx = await startServer({ WEBHOOK_ALLOW_PRIVATE: "true", OFFLINE_AFTER_SECONDS: "1" });
  ctx.services.start();
  tenant = await createTenant(ctx.sql, { plan: "enterprise" }); // more devices than the free plan allows
  team = await createTeam(ctx.sql, tenant.org.id);

  let verifier: Webhook | undefined;
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const payload = await req.text();
      const headers = Object.fromEntries(req.headers);
      try {
        const body = verifier!.verify(payload, headers) as Delivered["body"];
        delivered.push({ headers, body });
      } catch {
        badSignatures++;
        return new Response("bad signature", { status: 400 });
      }
      return new Response("ok");
    },
  });
  const hook = await ctx.request("POST", "/api/webhook-integrations", {
    token: tenant.token,
    body: { name: "journey", url: `http://127.0.0.1:${receiver.port}/hook`, event_types: ["*"] },
  });
  expect(hook.status).toBe(201);
  verifier = new Webhook(hook.body.data.secret);
  // Message events reach an integration only through a mapping of the message's team.
  const mapping = await ctx.request("POST", `/api/webhook-integrations/${hook.body.data.id}/mappings`, {
    token: tenant.token,
    body: { team_id: team.id, forwarding_mode: "always" },
  });
  expect(mapping.status).toBeLessThan(300);

  const res = await fetch(`${ctx.baseUrl}/api/broadcasting/connection`, { headers: { authorization: `Bearer ${tenant.token}` } });
  const details = (await res.json()) as ConnectionDetails;
  pusher = connectPusher(ctx.baseUrl, details, tenant.token);
  await connected(pusher);
  await listenOn(`private-organization.${tenant.org.id}`);
}, 60_000);

/** Subscribes the pusher-js client to a channel; everything it then receives lands in `live`. */
async function listenOn(name: string) {
  const channel = await subscribed(pusher, name);
  channel.bind_global((event: string, data: Record<string, any>) => {
    if (!event.startsWith("pusher:")) live.push({ event, data });
  });
}
const listenOnDevice = (deviceId: number) => listenOn(`private-device.${deviceId}`);

afterAll(async () => {
  pusher?.disconnect();
  receiver?.stop(true);
  if (ctx) await stopServer(ctx);
}, 60_000);

async function listEvents(): Promise<Listed[]> {
  const res = await ctx.request("GET", "/api/events?per_page=100", { token: tenant.token });
  expect(res.status).toBe(200);
  return res.body.data as Listed[];
}

/** An inbound SMS on a pool number through the provider's signed callback (the provider emulator). */
async function injectSms(to: string, body: string) {
  const { config } = ctx;
  const args = ["provider", "inject", "--server", ctx.baseUrl, "--public-url", config.PUBLIC_URL, "--token", config.PROVIDER_AUTH_TOKEN];
  const proc = Bun.spawn([process.execPath, "device-sim/main.ts", ...args, "--to", to, "--from", "+15557654321", "--body", body], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  expect(code, stderr).toBe(0);
}

async function ok(method: string, path: string, body?: unknown) {
  const res = await ctx.request(method, path, { token: tenant.token, body });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body;
}

/** A send scheduled an hour ahead from a number of the mapped team (so its message events reach the integration). */
async function scheduleSend() {
  const sim = await createSharedNumber(ctx.sql, [tenant.org.id]);
  await ctx.sql`update hosted_sim_organizations set team_id = ${team.id} where hosted_sim_id = ${sim.id}`;
  const sendAt = new Date(Date.now() + 3_600_000).toISOString();
  const body = await ok("POST", "/api/messages", { hosted_sim: sim.id, to: "+15550009999", text: "journey later", send_at: sendAt });
  return body.data as { id: number };
}

/** A BYOS device whose SIM card is deactivated through the API (which bumps the device's config). */
async function deactivatedSimCard(before?: (deviceId: number) => Promise<void>) {
  const { deviceId } = await createByosNumber(ctx.sql, tenant.org.id);
  await before?.(deviceId);
  const [card] = await ctx.sql<{ id: number }[]>`select id from sim_cards where device_id = ${deviceId}`;
  await ok("POST", `/api/byos/devices/${deviceId}/sims/${card!.id}/deactivate`);
  return { deviceId, simCardId: card!.id };
}

/** A BYOS number of the mapped team; its device is created active and never heartbeats unless told. */
async function byosNumberOfTeam(opts: { online?: boolean } = {}) {
  const byos = await createByosNumber(ctx.sql, tenant.org.id, opts);
  await ctx.sql`update hosted_sim_organizations set team_id = ${team.id} where hosted_sim_id = ${byos.hostedSimId}`;
  return byos;
}

/** An outbound send through a BYOS device, which then reports `reports` (the device's status reports). */
async function deviceSend(reports: { status: string; error?: string }[], extra: Record<string, unknown> = {}) {
  const byos = await byosNumberOfTeam({ online: reports.length > 0 });
  const body = await ok("POST", "/api/messages", { hosted_sim: byos.hostedSimId, to: "+15550008888", text: "journey via the phone", ...extra });
  const id = (body.data as { id: number }).id;
  // A phone reports on what it was handed (message.send): its number's first send goes at once.
  if (reports.length > 0) await eventually(async () => (await ctx.sql`select 1 from messages where id = ${id} and dispatched_at is not null`).length > 0);
  for (const report of reports) await ok("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, report);
  return (status: string) => (d: Record<string, any>) => d.message?.id === id && d.message?.status === status;
}

const heartbeat = (deviceId: number) => ok("POST", `/api/byos/devices/${deviceId}/heartbeat`, {});

/** Waits until the log holds an event of `type` for the device (the offline deadline is 1 s). */
const loggedForDevice = (type: string, deviceId: number) =>
  eventually(async () => (await listEvents()).some((e) => e.type === type && e.data.device_id === deviceId), 15_000, `${type} of device ${deviceId}`);

type Row = {
  type: string;
  /** The realtime event name clients bind to. */
  realtime: string;
  /** Raises the event by its real cause; returns a predicate picking this row's event by its payload. */
  raise: () => Promise<(data: Record<string, any>) => boolean>;
  /** message.received: the webhook's data also spreads the message's fields at the top level. */
  spreadsMessage?: boolean;
};

const ROWS: Row[] = [
  {
    type: "number.locked",
    realtime: "number.locked",
    raise: async () => {
      const sim = await createSharedNumber(ctx.sql, [tenant.org.id]);
      await ok("POST", `/api/numbers/${sim.id}/lock`);
      return (d) => d.hosted_sim_id === sim.id && d.number === sim.number;
    },
  },
  {
    type: "number.unlocked",
    realtime: "number.unlocked",
    raise: async () => {
      const sim = await createSharedNumber(ctx.sql, [tenant.org.id]);
      await ok("POST", `/api/numbers/${sim.id}/lock`);
      await ok("POST", `/api/numbers/${sim.id}/unlock`);
      return (d) => d.hosted_sim_id === sim.id && d.number === sim.number && d.locked === false;
    },
  },
  {
    type: "message.received",
    realtime: "message.received",
    raise: async () => {
      const sim = await createSharedNumber(ctx.sql, [tenant.org.id]);
      await ctx.sql`update hosted_sim_organizations set team_id = ${team.id} where hosted_sim_id = ${sim.id}`;
      const text = `journey ${crypto.randomUUID().slice(0, 8)}`;
      await injectSms(sim.number, text);
      return (d) => d.message?.text === text;
    },
    spreadsMessage: true,
  },
  {
    type: "device.disabled",
    realtime: "device.updated",
    raise: async () => {
      const { deviceId } = await createByosNumber(ctx.sql, tenant.org.id);
      await ok("POST", `/api/byos/devices/${deviceId}/disable`);
      return (d) => d.device_id === deviceId && d.status === "disabled";
    },
  },
  {
    type: "device.enabled",
    realtime: "device.updated",
    raise: async () => {
      const { deviceId } = await createByosNumber(ctx.sql, tenant.org.id);
      await ok("POST", `/api/byos/devices/${deviceId}/disable`);
      await ok("POST", `/api/byos/devices/${deviceId}/enable`);
      return (d) => d.device_id === deviceId && d.status === "active";
    },
  },
  {
    type: "device.updated",
    realtime: "device.updated",
    raise: async () => {
      const { deviceId } = await createByosNumber(ctx.sql, tenant.org.id);
      await ok("PATCH", `/api/byos/devices/${deviceId}`, { device_name: "journey phone" });
      return (d) => d.device_id === deviceId;
    },
  },
  {
    type: "device.revoked",
    realtime: "device.status_changed",
    raise: async () => {
      const { deviceId } = await createByosNumber(ctx.sql, tenant.org.id);
      await ok("DELETE", `/api/byos/devices/${deviceId}`);
      return (d) => d.device_id === deviceId && d.status === "revoked";
    },
  },
  {
    type: "message.scheduled",
    realtime: "message.status_changed",
    raise: async () => {
      const { id } = await scheduleSend();
      return (d) => d.message?.id === id && d.message?.status === "scheduled";
    },
  },
  {
    type: "message.cancelled",
    realtime: "message.status_changed",
    raise: async () => {
      const { id } = await scheduleSend();
      await ok("POST", `/api/messages/${id}/cancel`);
      return (d) => d.message?.id === id && d.message?.status === "cancelled";
    },
  },
  {
    type: "sim.deactivated",
    realtime: "sim.deactivated",
    raise: async () => {
      const { deviceId, simCardId } = await deactivatedSimCard();
      return (d) => d.device_id === deviceId && d.sim_card?.id === simCardId && d.reason === "deactivated";
    },
  },
  {
    type: "config.changed",
    realtime: "config.changed",
    // Delivered on the device's channel only: the client joins it before the change.
    raise: async () => {
      const { deviceId } = await deactivatedSimCard(listenOnDevice);
      return (d) => d.device_id === deviceId;
    },
  },
  {
    type: "device.offline",
    realtime: "device.status_changed",
    // A heartbeat brings it online; the offline deadline passes without another.
    raise: async () => {
      const { deviceId } = await createByosNumber(ctx.sql, tenant.org.id);
      await heartbeat(deviceId);
      return (d) => d.device_id === deviceId && d.is_online === false;
    },
  },
  {
    type: "device.online",
    realtime: "device.status_changed",
    // The heartbeat after the offline deadline (the row after device.offline, not the first heartbeat's).
    raise: async () => {
      const { deviceId } = await createByosNumber(ctx.sql, tenant.org.id);
      await heartbeat(deviceId);
      await loggedForDevice("device.offline", deviceId);
      const back = new Date().toISOString();
      await heartbeat(deviceId);
      return (d) => d.device_id === deviceId && d.is_online === true && d.changed_at >= back;
    },
  },
  {
    type: "sim.verified",
    realtime: "sim.verified",
    // The provider's callback carries the verification SMS the phone sent (test/fixtures-devices.ts).
    raise: async () => {
      const { device } = await activeDevice(ctx, tenant.token);
      return (d) => d.device_id === device.id && d.sim_card?.status === "active";
    },
  },
  { type: "message.queued", realtime: "message.status_changed", raise: async () => (await deviceSend([]))("queued") },
  { type: "message.sending", realtime: "message.status_changed", raise: async () => (await deviceSend([{ status: "sending" }]))("sending") },
  { type: "message.sent", realtime: "message.status_changed", raise: async () => (await deviceSend([{ status: "sending" }, { status: "sent" }]))("sent") },
  {
    type: "message.delivered",
    realtime: "message.status_changed",
    raise: async () => (await deviceSend([{ status: "sending" }, { status: "sent" }, { status: "delivered" }]))("delivered"),
  },
  {
    type: "message.failed",
    realtime: "message.status_changed",
    raise: async () => (await deviceSend([{ status: "sending" }, { status: "failed", error: "RESULT_ERROR_NO_SERVICE" }]))("failed"),
  },
  {
    type: "message.expired",
    realtime: "message.status_changed",
    // No device picks it up before its expires_at (a second from now): the pick-up job ends it expired.
    raise: async () => (await deviceSend([], { expires_at: new Date(Date.now() + 1000).toISOString() }))("expired"),
  },
];

describe("events journey: log, webhook and realtime agree", () => {
  test.each(ROWS.map((r) => [r.type, r] as const))(
    "%s: once in GET /api/events, once on the webhook, once on realtime, same payload",
    async (type, row) => {
      const mine = await row.raise();
      const inLog = await eventually(
        async () => {
          const found = (await listEvents()).filter((e) => e.type === type && mine(e.data));
          return found.length > 0 && found;
        },
        15_000,
        `${type} in GET /api/events`,
      );
      expect(inLog.length).toBe(1);
      const event = inLog[0]!;
      expect(event.organization_id).toBe(tenant.org.id);
      expect(typeof event.id).toBe("string");
      expect(Number.isNaN(Date.parse(event.created_at))).toBe(false);

      const hook = await eventually(() => delivered.find((d) => d.body.id === event.id), 15_000, `${type} on the webhook`);
      const rt = await eventually(() => live.find((l) => l.data.event_id === event.id), 15_000, `${type} on realtime`);
      expect(hook.headers["webhook-id"]).toBe(event.id);
      expect(hook.body.type).toBe(type);
      expect(hook.body.created_at).toBe(event.created_at);
      if (row.spreadsMessage) {
        expect(hook.body.data.message).toEqual(event.data.message);
        expect(hook.body.data).toMatchObject(event.data);
      } else expect(hook.body.data).toEqual(event.data);
      expect(delivered.filter((d) => d.body.id === event.id)).toHaveLength(1);

      expect(rt.event).toBe(row.realtime);
      expect(rt.data).toEqual({ ...event.data, event_id: event.id });
      expect(live.filter((l) => l.data.event_id === event.id)).toHaveLength(1);
      expect(badSignatures).toBe(0);
      seen.set(type, event.id);
    },
    60_000,
  );

  test("no duplicates: after a later event has come through both channels, each row's event was delivered once", async () => {
    expect([...seen.keys()]).toEqual(ROWS.map((r) => r.type));
    // Webhooks and realtime deliver in log order: once a later event is through, earlier repeats would be too.
    const sim = await createSharedNumber(ctx.sql, [tenant.org.id]);
    await ok("POST", `/api/numbers/${sim.id}/lock`);
    const later = await eventually(
      async () => (await listEvents()).find((e) => e.type === "number.locked" && e.data.hosted_sim_id === sim.id),
      15_000,
      "the later event in the log",
    );
    await eventually(() => delivered.some((d) => d.body.id === later.id), 15_000, "the later event on the webhook");
    await eventually(() => live.some((l) => l.data.event_id === later.id), 15_000, "the later event on realtime");
    const log = await listEvents();
    for (const id of seen.values()) {
      expect(log.filter((e) => e.id === id)).toHaveLength(1);
      expect(delivered.filter((d) => d.body.id === id)).toHaveLength(1);
      expect(live.filter((l) => l.data.event_id === id)).toHaveLength(1);
    }
    expect(badSignatures).toBe(0);
  }, 60_000);
});
