import { notFound } from "../errors";
import type { Clock, Scheduler } from "../lib/clock";
import { assertAcceptsHeartbeat, type DeviceStatus, OFFLINE_ALERT_STATUSES } from "./transitions";

export type Timing = {
  heartbeatSeconds: number;
  dozeHeartbeatSeconds: number;
  offlineAfterSeconds: number;
  dozeOfflineAfterSeconds: number;
};

/** What the database says about one device's presence (times in ms epoch). */
export type PresenceSnapshot = {
  id: number;
  organizationId: number;
  status: DeviceStatus;
  isOnline: boolean;
  doze: boolean;
  lastSeenAt: number | null;
  offlineSince: number | null;
  /** Offline, and this spell's alert not yet claimed by any instance. */
  alertOwed: boolean;
};

export type HeartbeatMetrics = {
  doze: boolean;
  batteryLevel?: number;
  signalStrength?: number;
  simCards?: { phone_number: string; signal_strength: number }[];
};

/** What a heartbeat's write found: null when the device is revoked (or gone). */
export type HeartbeatWritten = { wasOnline: boolean; status: DeviceStatus } | null;

export type ActorPersistence = {
  load(id: number): Promise<PresenceSnapshot | null>;
  /** Coalesced write of last_seen_at and metrics; null when the device is revoked (or gone). */
  recordHeartbeat(id: number, at: number, m: HeartbeatMetrics): Promise<HeartbeatWritten>;
  /**
   * The same write for a heartbeat already answered: it may wait a little, and a later heartbeat
   * of the device replaces it while it waits (null then: the pending write reports for both).
   */
  deferHeartbeat(id: number, at: number, m: HeartbeatMetrics): Promise<HeartbeatWritten> | null;
  /** Offline only if no heartbeat reached any instance within its timeout; `won` for the one caller that made the move. */
  markOffline(id: number, at: number): Promise<{ won: boolean; snapshot: PresenceSnapshot | null }>;
  /** True for the one caller allowed to send this spell's alert. */
  claimAlert(id: number, offlineSince: number, at: number): Promise<boolean>;
  /** Heartbeat writes are succeeding and not backing up: a heartbeat may be answered before its write lands. */
  writesKeepingUp(): boolean;
};

export type ActorEffects = {
  statusChanged(device: DeviceState, at: number): void;
  offlineAlert(device: DeviceState): Promise<void>;
  error(err: unknown, deviceId: number): void;
};

/**
 * One device's actor: a plain record (a few fields, no closures) so 100,000 idle ones stay
 * small. `tail` is the end of its queue of exclusive work.
 */
export type DeviceState = {
  id: number;
  organizationId: number;
  status: DeviceStatus;
  online: boolean;
  doze: boolean;
  lastSeenAt: number | null;
  offlineSince: number | null;
  tail: Promise<unknown> | null;
};

/** A device's two deadlines in the presence scheduler, by number (ids are positive): looked up on every heartbeat. */
const offlineKey = (id: number) => id;
const alertKey = (id: number) => -id;

function fromSnapshot(s: PresenceSnapshot): DeviceState {
  return {
    id: s.id,
    organizationId: s.organizationId,
    status: s.status,
    online: s.isOnline,
    doze: s.doze,
    lastSeenAt: s.lastSeenAt,
    offlineSince: s.offlineSince,
    tail: null,
  };
}

function apply(state: DeviceState, s: PresenceSnapshot) {
  state.status = s.status;
  state.online = s.isOnline;
  state.doze = s.doze;
  state.lastSeenAt = s.lastSeenAt;
  state.offlineSince = s.offlineSince;
}

/**
 * The device actors of this instance: created on first use (or rebuilt by `restore` after a
 * restart), each serialising the work on its device. Presence deadlines all live in one
 * scheduler; every move is decided by a conditional write, so several instances holding actors
 * of the same device still produce one event per real transition.
 */
export function createDeviceActors(deps: { clock: Clock; scheduler: Scheduler; timing: Timing; persist: ActorPersistence; effects: ActorEffects }) {
  const { clock, scheduler, timing, persist, effects } = deps;
  const actors = new Map<number, DeviceState>();
  const loading = new Map<number, Promise<DeviceState | null>>();
  const inFlight = new Set<Promise<unknown>>();

  /** Runs `fn` after every earlier exclusive task of the device. */
  function exclusive<T>(state: DeviceState, fn: () => Promise<T>): Promise<T> {
    const previous = state.tail ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.then(
      () => {},
      () => {},
    );
    state.tail = tail;
    // Drop the reference once idle so an idle actor holds no promise.
    void tail.then(() => {
      if (state.tail === tail) state.tail = null;
    });
    return run;
  }

  function track(p: Promise<unknown>) {
    inFlight.add(p);
    void p.catch((e) => effects.error(e, -1)).finally(() => inFlight.delete(p));
  }

  const offlineTimeout = (s: DeviceState) => (s.doze ? timing.dozeOfflineAfterSeconds : timing.offlineAfterSeconds) * 1000;
  const heartbeatInterval = (s: DeviceState) => (s.doze ? timing.dozeHeartbeatSeconds : timing.heartbeatSeconds) * 1000;

  /**
   * Arms the device's offline deadline. A heartbeat only moves the deadline later, so an earlier
   * entry already pending stays: when it fires, checkOffline finds the device seen since and
   * re-arms it for the real deadline. A heartbeat then costs no scheduler work at all.
   */
  function scheduleOffline(state: DeviceState) {
    if (state.lastSeenAt === null) return;
    const due = state.lastSeenAt + offlineTimeout(state);
    const armed = scheduler.dueAt(offlineKey(state.id));
    if (armed !== undefined && armed <= due) return;
    scheduler.schedule(offlineKey(state.id), due, () => checkOffline(state));
  }

  /** API.md: the alert waits two further heartbeat intervals after the device went offline. */
  function scheduleAlert(state: DeviceState) {
    if (state.offlineSince === null) return;
    scheduler.schedule(alertKey(state.id), state.offlineSince + 2 * heartbeatInterval(state), () => track(checkAlert(state)));
  }

  function checkOffline(state: DeviceState) {
    if (!state.online) return;
    if (state.lastSeenAt !== null && state.lastSeenAt + offlineTimeout(state) > clock.now()) return scheduleOffline(state);
    track(checkOfflineNow(state));
  }

  function checkOfflineNow(state: DeviceState) {
    return exclusive(state, async () => {
      if (!state.online) return;
      const at = clock.now();
      const { won, snapshot } = await persist.markOffline(state.id, at);
      if (!snapshot) return forget(state.id);
      if (snapshot.status === "revoked") return markRevoked(state);
      apply(state, snapshot);
      if (won) effects.statusChanged(state, at);
      if (snapshot.isOnline) scheduleOffline(state);
      else if (snapshot.alertOwed) scheduleAlert(state);
    });
  }

  function checkAlert(state: DeviceState) {
    return exclusive(state, async () => {
      if (state.online || state.offlineSince === null) return;
      if (!OFFLINE_ALERT_STATUSES.includes(state.status)) return;
      if (await persist.claimAlert(state.id, state.offlineSince, clock.now())) await effects.offlineAlert(state);
    });
  }

  function adopt(snapshot: PresenceSnapshot): DeviceState {
    const state = fromSnapshot(snapshot);
    actors.set(state.id, state);
    if (state.online) scheduleOffline(state);
    else if (snapshot.alertOwed) scheduleAlert(state);
    return state;
  }

  /** The device's actor, loaded from the database on first use; null when it does not exist. */
  async function get(id: number): Promise<DeviceState | null> {
    const known = actors.get(id);
    if (known) return known;
    let pending = loading.get(id);
    if (!pending) {
      pending = persist.load(id).then((s) => (s ? (actors.get(id) ?? adopt(s)) : null));
      loading.set(id, pending);
      void pending.finally(() => loading.delete(id)).catch(() => {});
    }
    return pending;
  }

  async function require(id: number, organizationId: number): Promise<DeviceState> {
    const state = await get(id);
    if (!state || state.organizationId !== organizationId) throw notFound("Device");
    return state;
  }

  function forget(id: number) {
    scheduler.cancel(offlineKey(id));
    scheduler.cancel(alertKey(id));
    actors.delete(id);
  }

  /** What a heartbeat's write found: revoked (gone), the status now, and whether this write brought the device back. */
  function settle(state: DeviceState, at: number, result: HeartbeatWritten, takeStatus: boolean) {
    if (!result) return markRevoked(state);
    if (state.status === "revoked") return;
    if (takeStatus) state.status = result.status;
    if (result.wasOnline) return;
    // A heartbeat answered before its write (deferHeartbeat) whose write landed after the device
    // was marked offline brought it back online in the database: the actor holds it online again,
    // with the deadline of that heartbeat, so that it goes offline again rather than stay online
    // with no deadline anywhere.
    if (!state.online) seen(state, Math.max(at, state.lastSeenAt ?? at), state.doze);
    effects.statusChanged(state, at);
  }

  function seen(state: DeviceState, at: number, doze: boolean) {
    state.online = true;
    state.doze = doze;
    state.lastSeenAt = at;
    state.offlineSince = null;
    scheduler.cancel(alertKey(state.id));
    scheduleOffline(state);
  }

  /**
   * A heartbeat. When this actor already holds the device online with nothing else queued on
   * it, the answer does not wait for the write: the write still goes into the next coalesced
   * batch, and what it finds (revoked meanwhile, or marked offline by another instance) is
   * settled when it lands, exactly as if it had been awaited. Otherwise (first heartbeat of a
   * spell, work queued, writes failing or backing up) the heartbeat waits for its write.
   */
  function heartbeat(state: DeviceState, m: HeartbeatMetrics): Promise<DeviceState> {
    if (state.tail === null && state.online && state.status !== "revoked" && persist.writesKeepingUp()) {
      const at = clock.now();
      seen(state, at, m.doze);
      // Exclusive work queued meanwhile (a disable, say) knows the status better than this write did.
      persist.deferHeartbeat(state.id, at, m)?.then(
        (r) => settle(state, at, r, state.tail === null),
        (e) => effects.error(e, state.id),
      );
      return Promise.resolve(state);
    }
    return exclusive(state, async () => {
      assertAcceptsHeartbeat(state.status);
      const at = clock.now();
      const result = await persist.recordHeartbeat(state.id, at, m);
      if (!result) markRevoked(state);
      assertAcceptsHeartbeat(state.status);
      seen(state, at, m.doze);
      settle(state, at, result, true);
      return state;
    });
  }

  /** A revoked device keeps no timers; its actor answers from its final status. */
  function markRevoked(state: DeviceState) {
    state.status = "revoked";
    state.online = false;
    scheduler.cancel(offlineKey(state.id));
    scheduler.cancel(alertKey(state.id));
  }

  return {
    get,
    require,
    heartbeat,
    /** Serialised work on a device (verification, enable, disable, revoke, edits). */
    run: <T>(state: DeviceState, fn: (state: DeviceState) => Promise<T>) => exclusive(state, () => fn(state)),
    /** Waits for the exclusive work queued so far (SMS submissions see the state it leaves). */
    settled: (state: DeviceState) => state.tail ?? Promise.resolve(),
    revoked: markRevoked,
    /** Another instance changed the device's status: the actor held here (if any) follows. */
    learn(id: number, status: DeviceStatus) {
      const state = actors.get(id);
      if (!state || state.status === "revoked") return;
      if (status === "revoked") markRevoked(state);
      else state.status = status;
    },
    /** Rebuilds the actors that have a deadline pending (online, or offline and owed an alert). */
    restore(snapshots: PresenceSnapshot[]) {
      for (const s of snapshots) if (!actors.has(s.id)) adopt(s);
    },
    forget,
    size: () => actors.size,
    onlineCount: () => {
      let n = 0;
      for (const a of actors.values()) if (a.online) n++;
      return n;
    },
    /** Resolves when the timer work started so far has finished (tests with a fake clock). */
    async drain() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

export type DeviceActors = ReturnType<typeof createDeviceActors>;
