import type { Mailer } from "../alerts/notify";
import { notifyOrganizationAdmins } from "../alerts/notify";
import type { Config } from "../config";
import { isTransientConflict, type Pool } from "../db/client";
import type { Bus } from "../events/bus";
import type { EventTail } from "../events/tail";
import type { JobQueue } from "../jobs/queue";
import { type Clock, createScheduler } from "../lib/clock";
import { createGroupCommit } from "../lib/group-commit";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import { createDeviceActors, type DeviceState, type Timing } from "./actor";
import { claimOfflineAlert, deviceForAlert, type HeartbeatWrite, loadPendingPresence, loadPresence, markOffline, writeHeartbeats } from "./presence-store";
import { retireMissingCards } from "./retirement";
import { createSmsIngest } from "./sms-ingest";
import type { DeviceStatus } from "./transitions";

type Deps = {
  sql: Pool;
  clock: Clock;
  config: Config;
  bus: Bus;
  events: Pick<EventTail, "notify">;
  mailer: Mailer;
  logger: Logger;
  jobs: JobQueue;
  metrics: Metrics;
};

/** Heartbeat interval a dozing device is told to use: API.md's 300 s next to the default 60 s. */
export const DOZE_HEARTBEAT_FACTOR = 5;

/** Heartbeats answered before their write past this many waiting writes would only grow memory: they wait again. */
const MAX_DEFERRED_HEARTBEATS = 20_000;
/**
 * How far the database's last_seen_at may trail a heartbeat already answered: next to a 60 s
 * heartbeat and a 360 s offline timeout, a second. A device that heartbeats more often than that
 * is written once a second (its latest heartbeat), not once per heartbeat (docs/benchmarks.md,
 * session of 2026-11-27 20:11: a tenth of the writes for such devices).
 */
const DEFERRED_WRITE_MS = 1000;

/**
 * Bus channel on which an instance that changed a device's status tells the others, whose actors
 * of that device would otherwise learn it from their next heartbeat's write. No client can
 * subscribe to it (only `private-` channels).
 */
export const DEVICE_STATUS_CHANNEL = "internal:devices";
export type DeviceStatusNews = { device_id: number; status: DeviceStatus };

/**
 * The long-lived part of the devices feature, built once per instance: the actors with their one
 * presence scheduler, the coalesced heartbeat writer and the durable SMS intake.
 */
export function createDeviceRuntime(deps: Deps) {
  const { sql, clock, config, logger } = deps;
  const scheduler = createScheduler(clock);
  const timing: Timing = {
    heartbeatSeconds: config.HEARTBEAT_SECONDS,
    dozeHeartbeatSeconds: config.HEARTBEAT_SECONDS * DOZE_HEARTBEAT_FACTOR,
    offlineAfterSeconds: config.OFFLINE_AFTER_SECONDS,
    dozeOfflineAfterSeconds: config.DOZE_OFFLINE_AFTER_SECONDS,
  };
  // Two writers of the same statement: one for heartbeats that wait for their write (the first
  // of an offline spell, say), written at once; one for heartbeats already answered, written at
  // most every DEFERRED_WRITE_MS so repeats of a device in that window become one row.
  let writesFailing = false;
  // The two writers may meet on a device; a deadlock between them is retried, not reported.
  async function writeWatched(items: HeartbeatWrite[]) {
    for (let attempt = 1; ; attempt++) {
      try {
        const written = await writeHeartbeats(sql, items);
        writesFailing = false;
        written.forEach((w, k) => {
          if (w?.missingCards.length) retireMissing(items[k]!.id, w.missingCards);
        });
        return written;
      } catch (e) {
        if (isTransientConflict(e) && attempt < 3) continue;
        writesFailing = true;
        throw e;
      }
    }
  }
  const awaited = createGroupCommit(writeWatched, { maxBatch: 1000, maxInFlight: 2 });
  const deferred = createGroupCommit(writeWatched, { maxBatch: 5000, maxInFlight: 1, lingerMs: DEFERRED_WRITE_MS });

  const actors = createDeviceActors({
    clock,
    scheduler,
    timing,
    persist: {
      load: (id) => loadPresence(sql, id),
      recordHeartbeat: (id, at, m) => awaited.submit({ id, at, m }),
      deferHeartbeat: (id, at, m) => deferred.submitLatest(id, { id, at, m }),
      markOffline: (id, at) => markOffline(sql, id, at, timing),
      claimAlert: (id, since, at) => claimOfflineAlert(sql, id, since, at),
      writesKeepingUp: () => !writesFailing && deferred.pending() < MAX_DEFERRED_HEARTBEATS,
    },
    effects: {
      // device.online / device.offline were appended by the write that made the transition.
      // A device back online also enqueued the dispatch of its waiting sends (message.outbound.device-online).
      statusChanged: () => {
        deps.events.notify();
        deps.jobs.wake();
      },
      offlineAlert: (d) => sendOfflineAlert(d),
      error: (err, deviceId) => logger.warn({ device: deviceId, err: (err as Error).message }, "device presence work failed"),
    },
  });

  // Not awaited by the heartbeat whose write found the cards missing: it runs on the device's
  // actor after the work already queued there (that heartbeat's own task, say).
  const retiring = new Set<Promise<void>>();
  function retireMissing(deviceId: number, cardIds: number[]) {
    const work = (async () => {
      const state = await actors.get(deviceId);
      if (!state || state.status === "revoked") return;
      const retired = await actors.run(state, () => retireMissingCards(sql, deviceId, cardIds, { organizationId: state.organizationId, at: clock.now() }));
      if (retired) deps.events.notify();
    })()
      .catch((err) => logger.warn({ device: deviceId, err: (err as Error).message }, "retiring missing SIM cards failed"))
      .finally(() => retiring.delete(work));
    retiring.add(work);
  }

  async function sendOfflineAlert(d: DeviceState) {
    const row = await deviceForAlert(sql, d.id);
    if (!row) return;
    const name = row.device_name || `device ${row.android_id}`;
    const since = row.last_seen_at ? row.last_seen_at.toISOString() : "never";
    await notifyOrganizationAdmins(
      { sql, mailer: deps.mailer, logger },
      {
        organizationId: d.organizationId,
        kind: "device_offline",
        subjectId: d.id,
        subject: `Device offline: ${name}`,
        text: `Your BYOS device ${name} (id ${d.id}) has sent no heartbeat since ${since} and has missed two further heartbeat intervals.\nSMS to its numbers are not relayed until it is back online.`,
      },
    );
  }

  deps.bus.subscribe((m) => {
    if (m.channel !== DEVICE_STATUS_CHANNEL) return;
    const news = m.data as DeviceStatusNews;
    actors.learn(news.device_id, news.status);
  });

  const sms = createSmsIngest({ sql, wake: () => deps.jobs.wake() });
  deps.metrics.gauge("simhost_device_actors", "Device actors held by this instance", () => actors.size());
  deps.metrics.gauge("simhost_devices_online", "Devices marked online", async () => {
    const [row] = await sql<{ n: number }[]>`select count(*) as n from devices where is_online`;
    return row?.n ?? 0;
  });

  return {
    actors,
    sms,
    timing,
    scheduler,
    /** `next_heartbeat_in` for a device in or out of doze mode. */
    nextHeartbeatIn: (doze: boolean) => (doze ? timing.dozeHeartbeatSeconds : timing.heartbeatSeconds),
    /** Rebuilds the actors whose deadlines were pending when the last instance stopped. */
    async start() {
      actors.restore(await loadPendingPresence(sql));
    },
    async stop() {
      await Promise.all([awaited.flush(), deferred.flush(), sms.flush()]);
      await Promise.allSettled([...retiring]);
      scheduler.stop();
    },
    /** Everything written and every timer task finished (tests). */
    async settle() {
      await Promise.all([awaited.flush(), deferred.flush(), sms.flush()]);
      while (retiring.size > 0) await Promise.allSettled([...retiring]);
      await actors.drain();
    },
  };
}

export type DeviceRuntime = ReturnType<typeof createDeviceRuntime>;
