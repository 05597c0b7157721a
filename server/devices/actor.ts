import { notFound } from "../errors";
import type { Clock, Scheduler } from "../lib/clock";
import { assertAcceptsHeartbeat, type DeviceStatus } from "./transitions";

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

export type ActorPersistence = {
  load(id: number): Promise<PresenceSnapshot | null>;
  /** Coalesced write of last_seen_at and metrics; null when the device is revoked (or gone). */
  recordHeartbeat(id: number, at: number, m: HeartbeatMetrics): Promise<{ wasOnline: boolean; status: DeviceStatus } | null>;
  /** Offline only if no heartbeat reached any instance within its timeout; `won` for the one caller that made the move. */
  markOffline(id: number, at: number): Promise<{ won: boolean; snapshot: PresenceSnapshot | null }>;
  /** True for the one caller allowed to send this spell's alert. */
  claimAlert(id: number, offlineSince: number, at: number): Promise<boolean>;
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

  function scheduleOffline(state: DeviceState) {
    if (state.lastSeenAt === null) return;
    scheduler.schedule(`o${state.id}`, state.lastSeenAt + offlineTimeout(state), () => track(checkOffline(state)));
  }

  /** API.md: the alert waits two further heartbeat intervals after the device went offline. */
  function scheduleAlert(state: DeviceState) {
    if (state.offlineSince === null) return;
    scheduler.schedule(`a${state.id}`, state.offlineSince + 2 * heartbeatInterval(state), () => track(checkAlert(state)));
  }

  function checkOffline(state: DeviceState) {
    return exclusive(state, async () => {
      if (!state.online) return;
      const at = clock.now();
      const { won, snapshot } = await persist.markOffline(state.id, at);
      if (!snapshot) return forget(state.id);
      apply(state, snapshot);
      if (won) effects.statusChanged(state, at);
      if (snapshot.isOnline) scheduleOffline(state);
      else if (snapshot.alertOwed) scheduleAlert(state);
    });
  }

  function checkAlert(state: DeviceState) {
    return exclusive(state, async () => {
      if (state.online || state.offlineSince === null) return;
      if (state.status !== "active" && state.status !== "pending_verification") return;
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
    scheduler.cancel(`o${id}`);
    scheduler.cancel(`a${id}`);
    actors.delete(id);
  }

  async function heartbeat(state: DeviceState, m: HeartbeatMetrics): Promise<DeviceState> {
    return exclusive(state, async () => {
      assertAcceptsHeartbeat(state.status);
      const at = clock.now();
      const result = await persist.recordHeartbeat(state.id, at, m);
      if (!result) {
        state.status = "revoked";
        assertAcceptsHeartbeat(state.status);
      }
      state.status = result!.status;
      state.online = true;
      state.doze = m.doze;
      state.lastSeenAt = at;
      state.offlineSince = null;
      scheduler.cancel(`a${state.id}`);
      scheduleOffline(state);
      if (!result!.wasOnline) effects.statusChanged(state, at);
      return state;
    });
  }

  return {
    get,
    require,
    heartbeat,
    /** Serialised work on a device (verification, enable, disable, revoke, edits). */
    run: <T>(state: DeviceState, fn: (state: DeviceState) => Promise<T>) => exclusive(state, () => fn(state)),
    /** Waits for the exclusive work queued so far (SMS submissions see the state it leaves). */
    settled: (state: DeviceState) => state.tail ?? Promise.resolve(),
    /** A revoked device keeps no timers; its actor answers from its final status. */
    revoked(state: DeviceState) {
      state.status = "revoked";
      state.online = false;
      scheduler.cancel(`o${state.id}`);
      scheduler.cancel(`a${state.id}`);
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
