import Pusher from "pusher-js/worker";
import type { ApiClient } from "./api-client";
import { CliError } from "./output";

export type Subscription = { subscribed: Promise<void>; close(): void };

/**
 * Listens on private channels with the unmodified pusher-js client (its worker build uses Bun's
 * own WebSocket and fetch). The socket is reached where the CLI reached the API: simhost serves
 * WebSockets on the API's own port, and the advertised host may be a public name this machine
 * does not resolve.
 */
export async function subscribe(api: ApiClient, channels: string[], onEvent: (channel: string, event: string, data: any) => void): Promise<Subscription> {
  const details = await api.ok(api.GET("/api/broadcasting/connection"));
  const base = new URL(api.url);
  const tls = base.protocol === "https:";
  const port = Number(base.port) || (tls ? 443 : 80);
  const pusher = new Pusher(details.key, {
    cluster: "simhost",
    wsHost: base.hostname,
    wsPort: port,
    wssPort: port,
    forceTLS: tls,
    enabledTransports: [tls ? "wss" : "ws"],
    disableStats: true,
    channelAuthorization: {
      // Through our client (the advertised auth endpoint is this route of the same API): the
      // Bearer token, --org and the API's error messages as everywhere else.
      customHandler: ({ socketId, channelName }, callback) => {
        api.ok(api.POST("/api/broadcasting/auth", { body: { socket_id: socketId, channel_name: channelName } })).then(
          (body) => callback(null, body),
          (e: Error) => callback(e, null),
        );
      },
    },
  });
  const waits = channels.map((name) => {
    const channel = pusher.subscribe(name);
    channel.bind_global((event: string, data: unknown) => {
      if (!event.startsWith("pusher")) onEvent(name, event, api.forPrinting(data));
    });
    return new Promise<void>((resolve, reject) => {
      channel.bind("pusher:subscription_succeeded", () => resolve());
      channel.bind("pusher:subscription_error", (e: { error?: string; status?: number }) =>
        reject(new CliError(`Not allowed to listen on ${name}${e?.status ? ` (${e.status})` : ""}.`)),
      );
    });
  });
  return { subscribed: Promise.all(waits).then(() => undefined), close: () => pusher.disconnect() };
}

/** Resolves on Ctrl-C / SIGTERM, or once `done` is called (for --count). */
export function untilStopped(): { stopped: Promise<void>; done: () => void } {
  let done!: () => void;
  const stopped = new Promise<void>((resolve) => {
    done = resolve;
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  return { stopped, done };
}
