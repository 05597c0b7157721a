import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SMTPServer } from "smtp-server";
import { claimOfflineAlert, writeHeartbeats } from "../../server/devices/presence-store";
import { createFakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { activeDevice, clockedContext, waitFor, watchPresence } from "../fixtures-devices";
import { logRows } from "../fixtures-events";
import { holdLocks, lockWaiters } from "../fixtures-numbers";
import { sharedTestContext, type TestContext } from "../helpers";

type Clocked = Awaited<ReturnType<typeof clockedContext>>;
const S = 1000;

let ctx: TestContext;
const mails: { to: string[]; raw: string }[] = [];
let smtp: SMTPServer;
let smtpPort = 0;

beforeAll(async () => {
  ctx = await sharedTestContext();
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (c: Buffer) => (raw += c.toString()));
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
  smtpPort = (smtp.server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => smtp.close(() => resolve())));

async function alertsOf(deviceId: number) {
  return ctx.sql<
    { recipients: string[]; sent_at: Date | null }[]
  >`select recipients, sent_at from alerts where kind = 'device_offline' and subject_id = ${deviceId}`;
}

describe("online and offline with a fake clock", () => {
  const clock = createFakeClock(Date.now());
  let c: Clocked;
  beforeAll(async () => {
    c = await clockedContext(ctx, clock, { SMTP_URL: `smtp://127.0.0.1:${smtpPort}` });
  });
  afterAll(() => c.close());

  const advance = async (ms: number) => {
    await c.services.devices.settle();
    clock.advance(ms);
    await c.services.devices.settle();
  };
  const heartbeat = (token: string, id: number, body: Record<string, unknown> = {}) => c.request("POST", `/api/byos/devices/${id}/heartbeat`, { token, body });
  const isOnline = async (token: string, id: number) => (await c.request("GET", `/api/byos/devices/${id}`, { token })).body.data.is_online;

  test("360 s normal: a heartbeat at 359 s keeps it online; one offline event, one alert by mail after two more intervals, one online event", async () => {
    const { token, user, org } = await createTenant(ctx.sql);
    const { device } = await activeDevice(c, token);
    const events = watchPresence(c.services, device.id);
    await heartbeat(token, device.id);
    await advance(359 * S);
    expect((await heartbeat(token, device.id)).body.next_heartbeat_in).toBe(60);
    await advance(359 * S);
    expect(await isOnline(token, device.id)).toBe(true);
    await advance(1 * S - 1);
    expect(await isOnline(token, device.id)).toBe(true);
    await advance(1);
    expect(await isOnline(token, device.id)).toBe(false);
    await waitFor(() => events.length >= 2);
    expect(events).toEqual(["online", "offline"]);

    await advance(120 * S - 1);
    expect(await alertsOf(device.id)).toHaveLength(0);
    await advance(1);
    const alerts = await alertsOf(device.id);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.recipients).toEqual([user.email]);
    // Mailed after it was recorded, off the device's work queue.
    expect(await waitFor(async () => (await alertsOf(device.id))[0]!.sent_at !== null)).toBe(true);
    expect(mails.filter((m) => m.to.includes(user.email))).toHaveLength(1);
    expect(mails.find((m) => m.to.includes(user.email))!.raw).toContain("Device offline");
    await advance(3600 * S);
    expect(await alertsOf(device.id)).toHaveLength(1);

    await heartbeat(token, device.id);
    await waitFor(() => events.length >= 3);
    expect(events).toEqual(["online", "offline", "online"]);
    // One log row per transition, appended by the write that made it.
    const rows = (await logRows(c.services, [org.id])).filter((r) => r.deviceId === device.id && r.type.startsWith("device."));
    expect(rows.map((r) => r.type)).toEqual(["device.online", "device.offline", "device.online"]);
    expect(rows[1]!.payload).toMatchObject({ device_id: device.id, organization_id: org.id, is_online: false, status: "active" });
  });

  test("960 s in doze mode, alert 600 s later (two doze intervals)", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(c, token);
    const events = watchPresence(c.services, device.id);
    expect((await heartbeat(token, device.id, { is_in_doze_mode: true })).body.next_heartbeat_in).toBe(300);
    await advance(959 * S);
    expect(await isOnline(token, device.id)).toBe(true);
    await advance(1 * S);
    expect(await isOnline(token, device.id)).toBe(false);
    await advance(599 * S);
    expect(await alertsOf(device.id)).toHaveLength(0);
    await advance(1 * S);
    expect(await alertsOf(device.id)).toHaveLength(1);
    await waitFor(() => events.length >= 2);
    expect(events).toEqual(["online", "offline"]);
  });

  test("a device back before the alert is due gets no alert", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(c, token);
    const events = watchPresence(c.services, device.id);
    await heartbeat(token, device.id);
    await advance(360 * S);
    await advance(60 * S);
    await heartbeat(token, device.id);
    await advance(119 * S);
    expect(await alertsOf(device.id)).toHaveLength(0);
    await waitFor(() => events.length >= 3);
    expect(events).toEqual(["online", "offline", "online"]);
  });

  test("a device disabled while offline gets no alert: neither the actor nor the claim's statement sends one", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(c, token);
    await heartbeat(token, device.id);
    await advance(360 * S);
    expect(await isOnline(token, device.id)).toBe(false);
    expect((await c.request("POST", `/api/byos/devices/${device.id}/disable`, { token })).status).toBe(200);
    await advance(120 * S);
    expect(await alertsOf(device.id)).toHaveLength(0);
    // The claim itself refuses a disabled device, whatever an instance's copy of its status says.
    const [row] = await ctx.sql<{ offline_since: Date }[]>`select offline_since from devices where id = ${device.id}`;
    expect(await claimOfflineAlert(ctx.sql, device.id, row!.offline_since.getTime(), clock.now())).toBe(false);
    await ctx.sql`update devices set status = 'active' where id = ${device.id}`;
    expect(await claimOfflineAlert(ctx.sql, device.id, row!.offline_since.getTime(), clock.now())).toBe(true);
  });
});

describe("a mail server that never answers", () => {
  test("holds up none of the device's work: its heartbeat and SMS answer while the offline alert's mail waits", async () => {
    // Greets, then reads and never answers: nodemailer waits for the next reply.
    const stalled: import("node:net").Socket[] = [];
    const hung = (await import("node:net")).createServer((socket) => {
      stalled.push(socket);
      socket.write("220 hung ESMTP\r\n");
      socket.on("data", () => {});
    });
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", () => resolve()));
    const clock = createFakeClock(Date.now());
    const c = await clockedContext(ctx, clock, { SMTP_URL: `smtp://127.0.0.1:${(hung.address() as { port: number }).port}` });
    try {
      const { token } = await createTenant(ctx.sql);
      const { device } = await activeDevice(c, token);
      const heartbeat = () => c.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: {} });
      expect((await heartbeat()).status).toBe(200);
      await c.services.devices.settle();
      clock.advance(361 * S);
      await c.services.devices.settle();
      clock.advance(121 * S);
      expect(await waitFor(() => stalled.length > 0, 10_000)).toBe(true);
      // The alert is recorded and its mail under way (no answer will come): the device is served at once.
      expect(await alertsOf(device.id)).toHaveLength(1);
      expect((await heartbeat()).status).toBe(200);
      const sms = await c.request("POST", `/api/byos/devices/${device.id}/sms`, {
        token,
        body: { message_id: crypto.randomUUID(), from: "+15550001111", body: "while the mail waits", sim_slot: 1 },
      });
      expect(sms.status).toBe(202);
      expect((await alertsOf(device.id))[0]!.sent_at).toBeNull();
    } finally {
      for (const socket of stalled) socket.destroy();
      hung.close();
      await c.close();
    }
  }, 30_000);
});

describe("two instances on one database", () => {
  const clock = createFakeClock(Date.now());
  let a: Clocked;
  let b: Clocked;
  beforeAll(async () => {
    a = await clockedContext(ctx, clock);
    b = await clockedContext(ctx, clock);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });
  // Heartbeats answered before their write lands (at most 100 ms later in real time) are written
  // before the fake clock jumps, as they would be long before the next deadline.
  const settle = () => Promise.all([a.services.devices.settle(), b.services.devices.settle()]);
  const advance = async (ms: number) => {
    await settle();
    clock.advance(ms);
    await settle();
  };

  test("heartbeats alternating between instances: one offline event per spell, one online event on return, one alert", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(a, token);
    const seenA = watchPresence(a.services, device.id);
    const seenB = watchPresence(b.services, device.id);
    // Every instance reads the log itself: each sees every event, with Redis or without.
    const events = () => seenA;
    const hb = (c: Clocked) => c.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: {} }).then((r) => expect(r.status).toBe(200));
    await hb(a);
    for (const c of [b, a, b]) {
      await advance(100 * S);
      await hb(c);
    }
    await advance(359 * S);
    await waitFor(() => events().length >= 1);
    expect(events()).toEqual(["online"]);
    await advance(1 * S);
    await waitFor(() => events().length >= 2);
    expect(events()).toEqual(["online", "offline"]);
    await advance(3600 * S);
    expect(await alertsOf(device.id)).toHaveLength(1);
    await hb(a);
    await hb(b);
    await advance(10 * S);
    await hb(b);
    await waitFor(() => events().length >= 3);
    expect(events()).toEqual(["online", "offline", "online"]);
    await waitFor(() => seenB.length >= 3);
    expect(seenB).toEqual(["online", "offline", "online"]);
  });
});

describe("heartbeat writes", () => {
  test("signal strengths: sim_cards[] name their cards, signal_strength goes to the first card unless named", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device, numbers } = await activeDevice(ctx, token, [1, 2]);
    const hb = async (body: Record<string, unknown>) => {
      const res = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body });
      expect(res.status).toBe(200);
      await ctx.services.devices.settle();
      const shown = await ctx.request("GET", `/api/byos/devices/${device.id}`, { token });
      return Object.fromEntries(shown.body.data.sim_cards.map((c: { sim_slot: number; signal_strength: number | null }) => [c.sim_slot, c.signal_strength]));
    };
    expect(await hb({ signal_strength: 55 })).toEqual({ 1: 55, 2: null });
    // Answered before its write lands (the device is online now); settle() waits for the write.
    expect(await hb({ signal_strength: 50, sim_cards: [{ phone_number: numbers[1], signal_strength: 33 }] })).toEqual({ 1: 50, 2: 33 });
    expect(await hb({ signal_strength: 10, sim_cards: [{ phone_number: numbers[0], signal_strength: 44 }] })).toEqual({ 1: 44, 2: 33 });
  });

  // The embedded database runs one session at a time: two writers cannot race there.
  test.skipIf(!process.env.DATABASE_URL)("two writers racing on an offline device: exactly one learns it brought the device back", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const write = (at: number) => writeHeartbeats(ctx.sql, [{ id: device.id, at, m: { doze: false } }]);
    for (let round = 0; round < 3; round++) {
      await ctx.sql`update devices set is_online = false, offline_since = now() where id = ${device.id}`;
      // Both writers queue behind a held row lock, so the second runs on the row the first just wrote.
      const release = await holdLocks(ctx.sql, (tx) => tx`select id from devices where id = ${device.id} for update`);
      const now = Date.now();
      const racing = Promise.all([write(now), write(now)]);
      await lockWaiters(ctx.sql, 2);
      await release();
      const results = (await racing).flat();
      expect(results.map((r) => r?.wasOnline).sort()).toEqual([false, true]);
    }
  });

  test("a device revoked through another instance: that instance's actor refuses its next heartbeat", async () => {
    const clock = createFakeClock(Date.now());
    const a = await clockedContext(ctx, clock);
    const b = await clockedContext(ctx, clock);
    try {
      const { token } = await createTenant(ctx.sql);
      const { device } = await activeDevice(a, token);
      const hb = (c: Clocked) => c.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: {} });
      expect((await hb(a)).status).toBe(200);
      expect((await hb(a)).status).toBe(200);
      expect((await b.request("DELETE", `/api/byos/devices/${device.id}`, { token })).status).toBe(204);
      if (a.services.bus.kind === "redis") {
        // The revoking instance tells the others on the bus: the very next heartbeat is refused.
        const state = await a.services.devices.actors.get(device.id);
        expect(await waitFor(() => state?.status === "revoked")).toBe(true);
      } else {
        // One instance alone: A learns it from the write of the one heartbeat it still answers.
        await hb(a);
        await a.services.devices.settle();
      }
      const refused = await hb(a);
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe("invalid_state");
    } finally {
      await a.close();
      await b.close();
    }
  });
});
