import { describe, expect, test } from "bun:test";
import { type ActorPersistence, createDeviceActors, type HeartbeatMetrics, type PresenceSnapshot } from "../../server/devices/actor";
import { createScheduler } from "../../server/lib/clock";
import { createFakeClock } from "../fake-clock";

const timing = { heartbeatSeconds: 60, dozeHeartbeatSeconds: 300, offlineAfterSeconds: 360, dozeOfflineAfterSeconds: 960 };

/** The database's side of presence in memory, with the same conditional-write rules. */
function memoryPersistence(rows: Map<number, PresenceSnapshot & { alerted: boolean }>): ActorPersistence {
  const snap = (id: number) => {
    const r = rows.get(id);
    return r ? { ...r, alertOwed: !r.isOnline && r.offlineSince !== null && !r.alerted } : null;
  };
  async function heartbeat(id: number, at: number, m: HeartbeatMetrics) {
    const r = rows.get(id)!;
    const wasOnline = r.isOnline;
    Object.assign(r, { isOnline: true, lastSeenAt: Math.max(r.lastSeenAt ?? 0, at), doze: m.doze, offlineSince: null, alerted: false });
    return { wasOnline, status: r.status };
  }
  return {
    load: async (id) => snap(id),
    recordHeartbeat: heartbeat,
    deferHeartbeat: heartbeat,
    async markOffline(id, at) {
      const r = rows.get(id)!;
      const timeout = (r.doze ? timing.dozeOfflineAfterSeconds : timing.offlineAfterSeconds) * 1000;
      const won = r.isOnline && (r.lastSeenAt ?? 0) <= at - timeout;
      if (won) Object.assign(r, { isOnline: false, offlineSince: at, alerted: false });
      return { won, snapshot: snap(id) };
    },
    async claimAlert(id, since) {
      const r = rows.get(id)!;
      if (r.isOnline || r.offlineSince !== since || r.alerted) return false;
      r.alerted = true;
      return true;
    },
    writesKeepingUp: () => true,
  };
}

function setup(clock = createFakeClock(0), rows = new Map<number, PresenceSnapshot & { alerted: boolean }>(), persist = memoryPersistence(rows)) {
  const scheduler = createScheduler(clock);
  const events: string[] = [];
  const alerts: number[] = [];
  const actors = createDeviceActors({
    clock,
    scheduler,
    timing,
    persist,
    effects: {
      statusChanged: (d) => events.push(`${d.id}:${d.online ? "online" : "offline"}`),
      offlineAlert: async (d) => void alerts.push(d.id),
      error: (e) => {
        throw e;
      },
    },
  });
  return { clock, rows, actors, events, alerts, scheduler };
}

const device = (id: number): PresenceSnapshot & { alerted: boolean } => ({
  id,
  organizationId: 1,
  status: "active",
  isOnline: false,
  doze: false,
  lastSeenAt: null,
  offlineSince: null,
  alertOwed: false,
  alerted: false,
});

describe("device actor presence (fake clock, no I/O)", () => {
  test("offline at exactly 360 s, alert 120 s later, once; online again on the next heartbeat", async () => {
    const t = setup();
    t.rows.set(1, device(1));
    const a = (await t.actors.get(1))!;
    await t.actors.heartbeat(a, { doze: false });
    t.clock.advance(359_999);
    await t.actors.drain();
    expect(t.events).toEqual(["1:online"]);
    t.clock.advance(1);
    await t.actors.drain();
    expect(t.events).toEqual(["1:online", "1:offline"]);
    t.clock.advance(119_999);
    await t.actors.drain();
    expect(t.alerts).toEqual([]);
    t.clock.advance(1);
    await t.actors.drain();
    t.clock.advance(10_000_000);
    await t.actors.drain();
    expect(t.alerts).toEqual([1]);
    await t.actors.heartbeat(a, { doze: false });
    expect(t.events).toEqual(["1:online", "1:offline", "1:online"]);
  });

  test("a heartbeat whose deferred write lands after the device went offline brings it back with a deadline: it goes offline again", async () => {
    const rows = new Map([[1, device(1)]]);
    const memory = memoryPersistence(rows);
    let land!: () => void;
    const landed = new Promise<void>((resolve) => (land = resolve));
    const t = setup(createFakeClock(0), rows, { ...memory, deferHeartbeat: (id, at, m) => landed.then(() => memory.deferHeartbeat(id, at, m)) });
    const a = (await t.actors.get(1))!;
    await t.actors.heartbeat(a, { doze: false });
    await t.actors.drain();
    t.clock.advance(60_000);
    await t.actors.heartbeat(a, { doze: false }); // answered at once; its write waits
    expect(rows.get(1)!.lastSeenAt).toBe(0);
    t.clock.advance(360_000); // the rows still say 0 s: offline
    await t.actors.drain();
    expect(t.events).toEqual(["1:online", "1:offline"]);
    land(); // the 60 s heartbeat's write brings the device back online in the rows
    await new Promise((resolve) => setImmediate(resolve));
    t.clock.advance(1); // that heartbeat's own deadline (420 s) has passed
    await t.actors.drain();
    expect(t.events).toEqual(["1:online", "1:offline", "1:online", "1:offline"]);
    expect(rows.get(1)!.isOnline).toBe(false);
  });

  test("two registries (two instances) sharing the rows: one offline event and one alert per spell", async () => {
    const clock = createFakeClock(0);
    const rows = new Map([[7, device(7)]]);
    const x = setup(clock, rows);
    const y = setup(clock, rows);
    await x.actors.heartbeat((await x.actors.get(7))!, { doze: false });
    clock.advance(200_000);
    await y.actors.heartbeat((await y.actors.get(7))!, { doze: false });
    for (let i = 0; i < 20; i++) {
      clock.advance(60_000);
      await Promise.all([x.actors.drain(), y.actors.drain()]);
    }
    expect([...x.events, ...y.events]).toEqual(["7:online", "7:offline"]);
    expect([...x.alerts, ...y.alerts]).toEqual([7]);
  });

  test("concurrent first use loads one actor; exclusive work runs in order", async () => {
    const t = setup();
    t.rows.set(3, device(3));
    const [p, q] = await Promise.all([t.actors.get(3), t.actors.get(3)]);
    expect(p).toBe(q!);
    const order: number[] = [];
    await Promise.all(
      [1, 2, 3].map((n) =>
        t.actors.run(p!, async () => {
          await Bun.sleep(3 - n);
          order.push(n);
        }),
      ),
    );
    expect(order).toEqual([1, 2, 3]);
    expect(t.actors.size()).toBe(1);
  });
});
