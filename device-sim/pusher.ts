import Pusher from "pusher-js/worker";
import type { RealtimePayload } from "../clients/api";
import type { Api, ConnectionDetails } from "./api";

/** `message.send` on private-device.{id}: an outbound SMS the phone must send (the catalog's payload). */
export type SendEvent = RealtimePayload<"message.send">;

export type DeviceChannelHandlers = {
  onSend?(data: SendEvent): void;
  /** `message.cancelled` (the catalog's `message.send_cancelled`): a send ordered before was cancelled. */
  onCancel?(messageId: number): void;
  onConfigChanged?(data: RealtimePayload<"config.changed">): void;
  onOther?(event: string, data: unknown): void;
};

/**
 * Listens on private-device.{id} with the unmodified pusher-js client, as the app does. The
 * worker build is used because it speaks through the runtime's own WebSocket and fetch, which
 * Bun has; the node build would pull in a polyfilled socket.
 */
export async function listenDeviceChannel(api: Api, deviceId: number, handlers: DeviceChannelHandlers) {
  const details = await api.connection();
  const pusher = new Pusher(details.key, {
    cluster: "local",
    ...socketOptions(details, api.baseUrl),
    channelAuthorization: {
      // Authorize through our own client so the Bearer token and the error handling are the app's.
      customHandler: ({ socketId, channelName }, callback) => {
        // The advertised auth endpoint is this route of the same API.
        api.authorizeChannel(socketId, channelName).then(
          (auth) => callback(null, auth),
          (e) => callback(e as Error, null),
        );
      },
    },
  });
  // Where this phone stands in the event log: the last event it saw (the position of its first
  // subscription before any). A subscription after a dropped connection catches up from there
  // (docs/events.md), as the app does: orders sent while the socket was down are not lost.
  let seen: string | null = null;
  const deliver = (event: string, data: unknown) => {
    const id = (data as { event_id?: unknown } | null)?.event_id;
    if (typeof id === "string") seen = id;
    // The server sends each event's catalog payload on its realtime name (docs/events.md).
    if (event === "message.send") handlers.onSend?.(data as SendEvent);
    else if (event === "message.cancelled") handlers.onCancel?.((data as RealtimePayload<"message.send_cancelled">).message.id);
    else if (event === "config.changed") handlers.onConfigChanged?.(data as RealtimePayload<"config.changed">);
    else if (!event.startsWith("pusher:")) handlers.onOther?.(event, data);
  };
  async function catchUp() {
    if (seen === null) return;
    for (;;) {
      const page = await api.events({ after: seen, device: deviceId, types: "message.send,message.send_cancelled", per_page: 100 });
      for (const e of page.data) deliver(e.type === "message.send_cancelled" ? "message.cancelled" : e.type, { ...(e.data as object), event_id: e.id });
      seen = page.meta.next_cursor;
      if (!page.meta.has_more) return;
    }
  }
  const channel = pusher.subscribe(`private-device.${deviceId}`);
  channel.bind_global(deliver);
  let subscribedOnce = false;
  const subscribed = new Promise<void>((resolve, reject) => {
    channel.bind("pusher:subscription_succeeded", () => {
      if (subscribedOnce) void catchUp().catch(() => {});
      else
        void api.events({ after: "now" }).then(
          (page) => (seen ??= page.meta.next_cursor),
          () => {},
        );
      subscribedOnce = true;
      resolve();
    });
    channel.bind("pusher:subscription_error", (e: unknown) => reject(new Error(`subscription to private-device.${deviceId} refused: ${JSON.stringify(e)}`)));
  });
  return { pusher, subscribed, close: () => pusher.disconnect() };
}

function socketOptions(d: ConnectionDetails, baseUrl: string) {
  // A server behind 0.0.0.0 or without a public host name is reached where its API is.
  const api = new URL(baseUrl);
  const host = !d.ws_host || d.ws_host === "0.0.0.0" ? api.hostname : d.ws_host;
  const port = d.ws_port || Number(api.port) || (api.protocol === "https:" ? 443 : 80);
  const tls = d.force_tls || d.ws_scheme === "wss";
  return { wsHost: host, wsPort: port, wssPort: port, forceTLS: tls, enabledTransports: [tls ? "wss" : "ws"] as ("ws" | "wss")[], disableStats: true };
}
