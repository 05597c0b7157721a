/**
 * Memory per idle device actor: 100,000 actors of online devices (each with its offline deadline
 * in the one presence scheduler), measured as heap growth after a full GC. No I/O: the actors
 * are adopted from presence snapshots as an instance does at start.
 *
 *   bun bench/devices-actors.ts [--devices 100000]
 */
import { createDeviceActors, type PresenceSnapshot } from "../server/devices/actor";
import { createScheduler, systemClock } from "../server/lib/clock";
import { arg } from "./devices-load";

const DEVICES = arg("devices", 100_000);
const timing = { heartbeatSeconds: 60, dozeHeartbeatSeconds: 300, offlineAfterSeconds: 360, dozeOfflineAfterSeconds: 960 };

function heap() {
  Bun.gc(true);
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
}

const scheduler = createScheduler(systemClock);
const actors = createDeviceActors({
  clock: systemClock,
  scheduler,
  timing,
  persist: {
    load: async () => null,
    recordHeartbeat: async () => ({ wasOnline: true, status: "active" }),
    deferHeartbeat: async () => ({ wasOnline: true, status: "active" }),
    markOffline: async () => ({ won: false, snapshot: null }),
    claimAlert: async () => false,
    writesKeepingUp: () => true,
  },
  effects: { statusChanged: () => {}, offlineAlert: async () => {}, error: () => {} },
});

const before = heap();
const now = Date.now();
for (let start = 1; start <= DEVICES; start += 10_000) {
  // Snapshots come in pages, as rows from the database would; only the actors stay.
  const page: PresenceSnapshot[] = [];
  for (let id = start; id < Math.min(start + 10_000, DEVICES + 1); id++) {
    page.push({
      id,
      organizationId: 1 + (id % 500),
      status: "active",
      isOnline: true,
      doze: id % 7 === 0,
      lastSeenAt: now - (id % 300) * 1000,
      offlineSince: null,
      alertOwed: false,
    });
  }
  actors.restore(page);
}
const after = heap();
const perActor = (after - before) / DEVICES;
console.log(
  JSON.stringify(
    {
      devices: actors.size(),
      scheduled: scheduler.size(),
      heapBeforeMiB: +(before / 2 ** 20).toFixed(1),
      heapAfterMiB: +(after / 2 ** 20).toFixed(1),
      bytesPerActor: Math.round(perActor),
    },
    null,
    2,
  ),
);
scheduler.stop();
