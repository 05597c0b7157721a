import type { ServerWebSocket } from "bun";
import type { Permission } from "../auth/caller";
import { channelRefusal, isValidChannelName, parseChannel } from "./channels";
import type { Grant, GrantStore } from "./grants";
import type { RealtimeLimits } from "./limits";
import { ErrorCode, errorFrame, eventFrame, parseClientFrame, subscriptionErrorFrame, verifyChannelSignature } from "./protocol";

/** State of one WebSocket connection; the handler functions are shared by all of them. */
export type SocketData = {
  open(ws: Socket): void;
  message(ws: Socket, raw: string | Buffer): void;
  close(ws: Socket, code: number, reason: string): void;
  drain(ws: Socket): void;
  id: string;
  appKey: string;
  protocol: string | null;
  /** The client's address (the socket peer), whose connections are counted (RealtimeLimits.maxConnectionsPerAddress). */
  address: string;
  /** Counted as one of its address's connections (from its open to its close). */
  counted: boolean;
  /** channel → what its subscription was granted (organization, credential); null while it is being set up */
  subscriptions: Map<string, Grant | null>;
  lastSeen: number;
  pingSentAt: number;
  slowSweeps: number;
};
export type Socket = ServerWebSocket<SocketData>;

/**
 * Bun topic of a channel's events meant for one organization only (`#` never occurs in channel
 * names): the topic of every event, which users' subscriptions take, or with `permission` the
 * topic of the events that permission reads (server/events/catalog.ts `permissionFor`), which an
 * API key's subscription takes for each permission it holds.
 */
export const orgTopic = (channel: string, organizationId: number, permission?: Permission) =>
  permission === undefined ? `${channel}#${organizationId}` : `${channel}#${organizationId}#${permission}`;

/** The topics a subscription granted `grant` takes: an API key's, those of its permissions only (none: it receives nothing). */
export const topicsOf = (channel: string, grant: Grant): string[] =>
  grant.credential.apiKeyId === null
    ? [orgTopic(channel, grant.organizationId)]
    : (grant.permissions ?? []).map((permission) => orgTopic(channel, grant.organizationId, permission));

export type ConnectionDeps = {
  credentials: { key: string; secret: string };
  grants: GrantStore;
  limits: RealtimeLimits;
  now(): number;
  countIn(): void;
  /** Whether the grant's credential still stands; false also when it was revoked while this was asked. */
  stillGranted(grant: Grant): Promise<boolean>;
};

/** Handles one client frame: ping, subscribe, unsubscribe; everything else is answered with pusher:error. */
export function createFrameHandler(deps: ConnectionDeps) {
  return function handleFrame(ws: Socket, raw: string | Buffer) {
    const d = ws.data;
    d.lastSeen = deps.now();
    d.pingSentAt = 0;
    deps.countIn();
    const size = typeof raw === "string" ? Buffer.byteLength(raw) : raw.byteLength;
    if (size > deps.limits.maxMessageBytes) {
      ws.send(errorFrame(`Message too large: at most ${deps.limits.maxMessageBytes} bytes.`, ErrorCode.messageTooLarge));
      return;
    }
    const frame = parseClientFrame(typeof raw === "string" ? raw : raw.toString("utf8"));
    if ("error" in frame) {
      ws.send(errorFrame(frame.error, null));
      return;
    }
    const data = (frame.data ?? {}) as Record<string, unknown>;
    switch (frame.event) {
      case "pusher:ping":
        ws.send(eventFrame("pusher:pong", {}));
        return;
      case "pusher:pong":
        return;
      case "pusher:subscribe":
        void subscribe(ws, data);
        return;
      case "pusher:unsubscribe":
        unsubscribe(ws, data.channel);
        return;
      default:
        if (frame.event.startsWith("client-")) ws.send(errorFrame("Client events are not enabled on this server.", ErrorCode.clientEventRejected));
        else ws.send(errorFrame(`Unknown event ${frame.event.slice(0, 64)}.`, null));
    }
  };

  async function subscribe(ws: Socket, data: Record<string, unknown>) {
    const d = ws.data;
    const channel = data.channel;
    if (!isValidChannelName(channel)) {
      ws.send(errorFrame("pusher:subscribe needs a valid channel name.", null));
      return;
    }
    const refusal = channelRefusal(channel);
    if (refusal) return void ws.send(subscriptionErrorFrame(channel, 403, refusal));
    if (!verifyChannelSignature(deps.credentials.key, deps.credentials.secret, d.id, channel, data.auth)) {
      return void ws.send(subscriptionErrorFrame(channel, 401, "Invalid or missing signature: authorize the channel with POST /api/broadcasting/auth."));
    }
    // Subscribed already: succeeded again. Still being checked: the first subscribe's answer is this one's too.
    if (d.subscriptions.has(channel)) {
      if (d.subscriptions.get(channel) !== null) ws.send(eventFrame("pusher_internal:subscription_succeeded", {}, channel));
      return;
    }
    if (d.subscriptions.size >= deps.limits.maxSubscriptionsPerConnection) {
      const limit = deps.limits.maxSubscriptionsPerConnection;
      return void ws.send(subscriptionErrorFrame(channel, 429, `At most ${limit} channels per connection.`, "LimitReached"));
    }
    // Reserve the slot now: the grant lookup may take a round trip to Redis and the database.
    d.subscriptions.set(channel, null);
    const outcome = await checkGrant(d.id, channel);
    // Closed, or unsubscribed meanwhile.
    if (ws.readyState !== 1 || d.subscriptions.get(channel) !== null) return;
    if ("status" in outcome) {
      d.subscriptions.delete(channel);
      return void ws.send(subscriptionErrorFrame(channel, outcome.status, outcome.error));
    }
    d.subscriptions.set(channel, outcome);
    for (const topic of topicsOf(channel, outcome)) ws.subscribe(topic);
    ws.send(eventFrame("pusher_internal:subscription_succeeded", {}, channel));
  }

  /**
   * The grant the auth endpoint recorded for this socket and channel, if its credential still
   * stands; else why not. Without a grant nothing could end the subscription when the credential
   * is revoked, so none is accepted without one.
   */
  async function checkGrant(socketId: string, channel: string): Promise<Grant | { status: number; error: string }> {
    const grant = await deps.grants.take(socketId, channel);
    const parsed = parseChannel(channel)!;
    if (!grant || (parsed.kind === "organization" && grant.organizationId !== parsed.id)) {
      return { status: 401, error: "No authorization recorded for this connection and channel (expired, or lost while the cache was down): authorize again." };
    }
    const standing = await deps.stillGranted(grant).catch(() => null);
    if (standing === null) return { status: 503, error: "Authorization could not be checked right now; try again." };
    if (!standing) return { status: 401, error: "The credential that authorized this channel was revoked." };
    return grant;
  }

  function unsubscribe(ws: Socket, channel: unknown) {
    const d = ws.data;
    if (typeof channel !== "string" || !d.subscriptions.has(channel)) return;
    const grant = d.subscriptions.get(channel);
    d.subscriptions.delete(channel);
    if (grant) for (const topic of topicsOf(channel, grant)) ws.unsubscribe(topic);
  }
}
