import type { ServerWebSocket } from "bun";
import { channelRefusal, isValidChannelName, parseChannel } from "./channels";
import type { GrantStore } from "./grants";
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
  /** channel → organization the subscription was authorized for (null: unknown, sees no filtered events) */
  subscriptions: Map<string, number | null>;
  lastSeen: number;
  pingSentAt: number;
  slowSweeps: number;
};
export type Socket = ServerWebSocket<SocketData>;

/** Bun topic of a channel's events meant for one organization only (`#` never occurs in channel names). */
export const orgTopic = (channel: string, organizationId: number) => `${channel}#${organizationId}`;

export type ConnectionDeps = {
  credentials: { key: string; secret: string };
  grants: GrantStore;
  limits: RealtimeLimits;
  now(): number;
  countIn(): void;
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
    if (d.subscriptions.has(channel)) return void ws.send(eventFrame("pusher_internal:subscription_succeeded", {}, channel));
    if (d.subscriptions.size >= deps.limits.maxSubscriptionsPerConnection) {
      const limit = deps.limits.maxSubscriptionsPerConnection;
      return void ws.send(subscriptionErrorFrame(channel, 429, `At most ${limit} channels per connection.`, "LimitReached"));
    }
    // Reserve the slot now: the grant lookup may take a round trip to Redis.
    d.subscriptions.set(channel, null);
    const parsed = parseChannel(channel)!;
    const org = parsed.kind === "organization" ? parsed.id : await deps.grants.take(d.id, channel);
    if (ws.readyState !== 1 || !d.subscriptions.has(channel)) return;
    d.subscriptions.set(channel, org);
    ws.subscribe(channel);
    if (org !== null) ws.subscribe(orgTopic(channel, org));
    ws.send(eventFrame("pusher_internal:subscription_succeeded", {}, channel));
  }

  function unsubscribe(ws: Socket, channel: unknown) {
    const d = ws.data;
    if (typeof channel !== "string" || !d.subscriptions.has(channel)) return;
    const org = d.subscriptions.get(channel);
    d.subscriptions.delete(channel);
    ws.unsubscribe(channel);
    if (org !== null && org !== undefined) ws.unsubscribe(orgTopic(channel, org));
  }
}
