import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createFakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { activeDevice, clockedContext, randomSimNumber, registerDevice, verificationSms, waitFor, watchPresence } from "../fixtures-devices";
import { sharedTestContext, type TestContext } from "../helpers";

const S = 1000;
const H = 3600 * S;

/** The server's clock jumping (NTP step, VM resume, operator error) around deadlines it keeps. */
describe("clock jumps around offline deadlines and code expiry", () => {
  let base: TestContext;
  let c: Awaited<ReturnType<typeof clockedContext>>;
  const start = Date.now();
  const clock = createFakeClock(start);

  beforeAll(async () => {
    base = await sharedTestContext();
    c = await clockedContext(base, clock);
  });
  afterAll(() => c.close());

  const jump = async (to: number) => {
    clock.set(to);
    await c.services.devices.settle();
  };
  const heartbeat = (token: string, id: number) => c.request("POST", `/api/byos/devices/${id}/heartbeat`, { token, body: {} });
  const alerts = async (id: number) =>
    (await base.sql<{ n: number }[]>`select count(*)::int as n from alerts where kind = 'device_offline' and subject_id = ${id}`)[0]!.n;

  test("far forward in one step: one offline event and one alert, not one per missed interval", async () => {
    const { token } = await createTenant(base.sql);
    const { device } = await activeDevice(c, token);
    const events = watchPresence(c.services, device.id);
    await jump(start);
    expect((await heartbeat(token, device.id)).status).toBe(200);
    await jump(start + 10 * H); // offline deadline and alert deadline both long past
    await waitFor(() => events.length >= 2);
    expect(events).toEqual(["online", "offline"]);
    // The spell starts when the server notices (the jump), so the alert is two intervals later.
    expect(await alerts(device.id)).toBe(0);
    await jump(start + 10 * H + 120 * S);
    expect(await alerts(device.id)).toBe(1);
    await jump(start + 30 * H);
    expect(await alerts(device.id)).toBe(1);
    expect(events).toEqual(["online", "offline"]);
    await heartbeat(token, device.id);
    await waitFor(() => events.length >= 3);
    expect(events).toEqual(["online", "offline", "online"]);
  });

  test("backwards: heartbeats after the clock stepped back an hour never make the device offline; it goes offline once after the last one", async () => {
    const t = start + 40 * H;
    const { token } = await createTenant(base.sql);
    const { device } = await activeDevice(c, token);
    const events = watchPresence(c.services, device.id);
    await jump(t);
    await heartbeat(token, device.id);
    await jump(t - H);
    for (let k = 1; k <= 10; k++) {
      await jump(t - H + k * 60 * S);
      expect((await heartbeat(token, device.id)).status).toBe(200);
    }
    expect(events).toEqual(["online"]);
    expect(await alerts(device.id)).toBe(0);
    // The last heartbeat the database holds is the one stamped before the step back (t).
    await jump(t + 359 * S);
    expect(events).toEqual(["online"]);
    await jump(t + 361 * S);
    await waitFor(() => events.length >= 2);
    expect(events).toEqual(["online", "offline"]);
  });

  test("verification codes: expired after a forward jump; a code issued later stays valid when the clock steps back", async () => {
    const { token } = await createTenant(base.sql);
    await jump(start + 50 * H);
    const device = await registerDevice(c, token);
    const card = device.sim_cards[0]!;
    await jump(start + 50 * H + 6 * 60 * S); // past the 5-minute lifetime
    expect((await verificationSms(c, card.verification_code, randomSimNumber())).status).toBe(200);
    const pending = await c.request("GET", `/api/byos/devices/${device.id}`, { token });
    expect(pending.body.data.status).toBe("pending_verification");

    const reissued = await c.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/reissue-code`, { token });
    expect(reissued.status).toBe(200);
    await jump(start + 49 * H); // an hour back: the new code is not "expired" by the step
    expect((await verificationSms(c, reissued.body.data.verification_code, randomSimNumber())).status).toBe(200);
    const active = await c.request("GET", `/api/byos/devices/${device.id}`, { token });
    expect(active.body.data.status).toBe("active");
  });
});
