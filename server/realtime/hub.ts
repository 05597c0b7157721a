import type { Server } from "bun";
import { Counter } from "prom-client";
import type { Permission } from "../auth/caller";
import { permissionFor, realtimeOf } from "../events/catalog";
import type { StoredEvent } from "../events/log";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import { createFrameHandler, orgTopic, type Socket, type SocketData } from "./connection";
import type { Grant, GrantStore } from "./grants";
import { DEFAULT_LIMITS, type RealtimeLimits } from "./limits";
import { CloseCode, errorFrame, eventFrame, newSocketId, PROTOCOL_VERSION, SUPPORTED_PROTOCOLS } from "./protocol";
import { createRecheck } from "./recheck";
import { createRevocationLog, type Revocation, revokes } from "./revocation";
import { sweepSockets } from "./sweep";

export type Realtime = ReturnType<typeof createRealtime>;

/** Gauges read at scrape time; the counter of slow clients closed is returned. */
function registerMetrics(metrics: Metrics, sockets: Set<Socket>) {
  metrics.gauge("simhost_ws_connections", "Open WebSocket connections on this instance", () => sockets.size);
  metrics.gauge("simhost_ws_subscriptions", "Channel subscriptions on this instance", () => {
    let n = 0;
    for (const ws of sockets) n += ws.data.subscriptions.size;
    return n;
  });
  return new Counter({
    name: "simhost_ws_slow_clients_closed_total",
    help: "WebSocket connections closed because they did not read their events",
    registers: [metrics.registry],
  });
}

/** Why a new connection is turned away, with the close code that tells the client what to do. */
function refuseConnection(d: SocketData, o: { closing: boolean; appKey: string; connections: number; fromAddress: number; limits: RealtimeLimits }) {
  if (o.closing) return { code: CloseCode.reconnectNow, message: "Server is restarting; reconnect." };
  if (d.appKey !== o.appKey) return { code: CloseCode.unknownAppKey, message: `App key ${d.appKey.slice(0, 64)} does not exist.` };
  // No ?protocol= is taken as 7: a hand-built URL from the connection details still works.
  if (d.protocol !== null && !/^\d{1,3}$/.test(d.protocol)) return { code: CloseCode.badProtocolVersion, message: "Invalid protocol version." };
  if (d.protocol !== null && !SUPPORTED_PROTOCOLS.has(Number(d.protocol))) {
    return { code: CloseCode.unsupportedProtocol, message: `Unsupported protocol version ${d.protocol}; this server speaks ${PROTOCOL_VERSION}.` };
  }
  if (o.connections >= o.limits.maxConnections) return { code: CloseCode.overQuota, message: "Over connection quota." };
  if (o.fromAddress >= o.limits.maxConnectionsPerAddress) return { code: CloseCode.overQuota, message: "Over connection quota for this address." };
  return null;
}

/**
 * One event on one channel, as this instance hands it to its sockets (limited to `organizations`;
 * of API keys' subscriptions, to those holding `permission`).
 */
export type Delivery = { channel: string; event: string; data: Record<string, unknown>; organizations: number[]; permission: Permission };

/** What realtime clients receive for a row of the log: its catalog name and channels, data = payload + `event_id` (the cursor). */
export function deliveriesOf(e: StoredEvent): Delivery[] {
  const r = realtimeOf(e);
  if (!r) return [];
  const data = { ...e.payload, event_id: e.cursor };
  const permission = permissionFor(e.type);
  return r.channels.map((channel) => ({ channel, event: r.name, data, organizations: [e.organizationId], permission }));
}

/**
 * The WebSocket side of one instance: its connections, and delivery of every event of the log
 * (read by this instance's tail, server/events/tail.ts) to this instance's connections subscribed
 * to its channels, through Bun topics of the event's one organization. Each instance reads the
 * log itself, so nothing of this goes through Redis.
 */
export function createRealtime(deps: {
  /** The instance's event tail (`services.events.onEvents`). */
  onEvents(listener: (events: StoredEvent[]) => void): () => void;
  credentials: { key: string; secret: string };
  grants: GrantStore;
  /** The indexes of the grants whose credential still stands (server/realtime/store.ts). */
  standing(grants: Grant[]): Promise<Set<number>>;
  /** Revocations seen on this instance (the authenticator's `onRevoked`). */
  onRevoked?(listener: (r: Revocation) => void): () => void;
  metrics: Metrics;
  logger: Logger;
  now?: () => number;
  limits?: Partial<RealtimeLimits>;
}) {
  const now = deps.now ?? Date.now;
  const limits: RealtimeLimits = { ...DEFAULT_LIMITS, ...deps.limits };
  const sockets = new Set<Socket>();
  let server: Server<SocketData> | null = null;
  let closing = false;
  let sweepTimer: ReturnType<typeof setTimeout> | undefined;

  const { wsMessages } = deps.metrics;
  const slowClosed = registerMetrics(deps.metrics, sockets);

  const revocations = createRevocationLog();
  /** Checked against the database; a revocation that arrived meanwhile counts too. */
  async function stillGranted(grant: Grant): Promise<boolean> {
    for (;;) {
      const mark = revocations.mark();
      if (!(await deps.standing([grant])).has(0)) return false;
      const meanwhile = revocations.since(mark, grant);
      if (meanwhile !== "recheck") return meanwhile === "none";
    }
  }

  const handleFrame = createFrameHandler({
    credentials: deps.credentials,
    grants: deps.grants,
    limits,
    now,
    countIn: () => wsMessages.inc({ direction: "in" }),
    stillGranted,
  });

  /** Pusher's 4009 "connection is unauthorized": pusher-js marks every channel unsubscribed and does not reconnect by itself. */
  function endUnauthorized(ws: Socket) {
    const message = "Connection is unauthorized: the credential that authorized a subscription was revoked.";
    ws.send(errorFrame(message, CloseCode.unauthorized));
    ws.close(CloseCode.unauthorized, message);
    sockets.delete(ws);
  }

  const recheck = createRecheck({ sockets, standing: deps.standing, end: endUnauthorized, logger: deps.logger });

  function revoked(r: Revocation) {
    revocations.record(r);
    if (r.everything) return recheck.run();
    for (const ws of sockets) {
      for (const grant of ws.data.subscriptions.values()) {
        if (grant && revokes(r, grant)) {
          endUnauthorized(ws);
          break;
        }
      }
    }
  }
  const stopRevocations = deps.onRevoked?.(revoked);

  /** Open connections by client address, each counted from its open to its close (Bun calls close for every socket it opened). */
  const byAddress = new Map<string, number>();

  function open(ws: Socket) {
    const { address } = ws.data;
    const fromAddress = byAddress.get(address) ?? 0;
    const refusal = refuseConnection(ws.data, { closing, appKey: deps.credentials.key, connections: sockets.size, fromAddress, limits });
    if (refusal) {
      ws.send(errorFrame(refusal.message, refusal.code));
      ws.close(refusal.code, refusal.message);
      return;
    }
    byAddress.set(address, fromAddress + 1);
    ws.data.counted = true;
    sockets.add(ws);
    ws.send(eventFrame("pusher:connection_established", { socket_id: ws.data.id, activity_timeout: limits.activityTimeoutSeconds }));
  }

  function close(ws: Socket) {
    sockets.delete(ws);
    if (!ws.data.counted) return;
    ws.data.counted = false;
    const left = (byAddress.get(ws.data.address) ?? 1) - 1;
    if (left > 0) byAddress.set(ws.data.address, left);
    else byAddress.delete(ws.data.address);
  }

  const handlers = {
    open,
    message: handleFrame,
    close,
    drain: (ws: Socket) => void (ws.data.slowSweeps = 0),
  };

  /** The `data` of a socket about to be upgraded, from `address` (the client's). */
  function socketData(appKey: string, protocol: string | null, address: string): SocketData {
    return {
      ...handlers,
      id: newSocketId(),
      appKey,
      protocol,
      address,
      counted: false,
      subscriptions: new Map(),
      lastSeen: now(),
      pingSentAt: 0,
      slowSweeps: 0,
    };
  }

  const watchers = new Set<(d: Delivery) => void>();

  function deliver(m: Delivery) {
    for (const w of watchers) w(m);
    if (!server) return;
    const frame = eventFrame(m.event, m.data, m.channel);
    const topics = m.organizations.flatMap((org) => [orgTopic(m.channel, org), orgTopic(m.channel, org, m.permission)]);
    let receivers = 0;
    for (const topic of topics) {
      const n = server.subscriberCount(topic);
      if (n === 0) continue;
      receivers += n;
      server.publish(topic, frame);
    }
    if (receivers > 0) wsMessages.inc({ direction: "out" }, receivers);
  }

  const sweep = () => sweepSockets(sockets, limits, now(), () => slowClosed.inc());

  function scheduleSweep() {
    sweepTimer = setTimeout(() => {
      sweep();
      scheduleSweep();
    }, limits.sweepSeconds * 1000);
    sweepTimer.unref?.();
  }

  const deliverEvents = (events: StoredEvent[]) => {
    for (const e of events) for (const d of deliveriesOf(e)) deliver(d);
  };
  const unsubscribeEvents = deps.onEvents(deliverEvents);
  scheduleSweep();

  return {
    credentials: deps.credentials,
    grants: deps.grants,
    limits,
    socketData,
    /** Ends the subscriptions a revocation takes away (the authenticator calls it on every instance). */
    revoked,
    /** The Bun server the sockets live on, known from the first upgrade; topics publish through it. */
    attach(s: Server<SocketData>) {
      server = s;
    },
    connections: () => sockets.size,
    /** Hands rows of the log to this instance's sockets (the tail does; the broadcast bench calls it directly). */
    deliverEvents,
    /** Every delivery this instance makes, as it makes it (tests, diagnostics). */
    watch(listener: (d: Delivery) => void) {
      watchers.add(listener);
      return () => void watchers.delete(listener);
    },
    sweep,
    /** Every client is told to reconnect at once: behind a load balancer, to any instance (rebalancing). */
    reconnectAll() {
      for (const ws of sockets) ws.close(CloseCode.reconnectNow, "Reconnect, please.");
      sockets.clear();
    },
    /** Graceful shutdown: clients reconnect at once, to another instance; new ones are sent away the same way. */
    shutdown() {
      closing = true;
      for (const ws of sockets) ws.close(CloseCode.reconnectNow, "Server is restarting; reconnect.");
      sockets.clear();
    },
    close() {
      clearTimeout(sweepTimer);
      unsubscribeEvents();
      stopRevocations?.();
      recheck.stop();
      for (const ws of sockets) ws.close(CloseCode.reconnectNow, "Server is restarting; reconnect.");
      sockets.clear();
      deps.logger.debug("realtime closed");
    },
  };
}
