import { useEffect } from "preact/hooks";
import Pusher, { type Channel } from "pusher-js";
import { api, fetchIdentity, ok } from "./api";
import { token } from "./session";

/**
 * One Pusher-protocol connection per signed-in tab, to the /app/{key} endpoint of the server
 * that served the console (same origin, so the Content-Security-Policy's 'self' covers it).
 * `onReconnect` listeners run when the connection comes back after a drop, so views catch up
 * on what they missed through the API.
 */
let client: Pusher | null = null;
let connecting: Promise<Pusher> | null = null;
const reconnectListeners = new Set<() => void>();
const stateListeners = new Set<(state: string) => void>();
let state = "initialized";

async function connect(): Promise<Pusher> {
  const details = await ok(api.GET("/api/broadcasting/connection"));
  const secure = location.protocol === "https:";
  const port = Number(location.port || (secure ? 443 : 80));
  const pusher = new Pusher(details.key, {
    cluster: "simhost",
    wsHost: location.hostname,
    wsPort: port,
    wssPort: port,
    forceTLS: secure,
    enabledTransports: ["ws", "wss"],
    disableStats: true,
    channelAuthorization: {
      endpoint: details.auth_endpoint,
      transport: "ajax",
      headersProvider: () => ({ Authorization: `Bearer ${token() ?? ""}` }),
    },
  });
  let dropped = false;
  pusher.connection.bind("state_change", ({ current }: { current: string }) => {
    state = current;
    for (const fn of stateListeners) fn(current);
    if (current === "connected" && dropped) for (const fn of reconnectListeners) fn();
    if (current === "unavailable" || current === "connecting" || current === "disconnected") dropped = true;
    // Disconnected without our asking: the server ended the connection for good (pusher-js does
    // not come back after 4000-4099), as it does when the session is revoked (4009). Asking who
    // we are answers 401 then, which signs this tab out; otherwise the header says "Disconnected".
    if (current === "disconnected" && client === pusher) void fetchIdentity().catch(() => {});
  });
  return pusher;
}

export function realtime(): Promise<Pusher> {
  if (client) return Promise.resolve(client);
  connecting ??= connect().then((p) => (client = p));
  return connecting;
}

/** Subscribes `handler` to `event` on `channelName`; the returned function undoes it. */
export function listen<T>(channelName: string, event: string, handler: (data: T) => void): () => void {
  let channel: Channel | null = null;
  let stopped = false;
  realtime()
    .then((p) => {
      if (stopped) return;
      channel = p.channel(channelName) ?? p.subscribe(channelName);
      channel.bind(event, handler);
    })
    .catch(() => {});
  return () => {
    stopped = true;
    channel?.unbind(event, handler);
  };
}

/** Calls `reload` whenever one of `events` arrives on the organization's channel, while the component is mounted. */
export function useReloadOn(orgId: number, events: readonly string[], reload: () => void) {
  useEffect(() => {
    const offs = events.map((event) => listen(`private-organization.${orgId}`, event, () => reload()));
    return () => {
      for (const off of offs) off();
    };
  }, [orgId]);
}

export function onReconnect(fn: () => void): () => void {
  reconnectListeners.add(fn);
  return () => reconnectListeners.delete(fn);
}

export function onConnectionState(fn: (state: string) => void): () => void {
  stateListeners.add(fn);
  fn(state);
  return () => stateListeners.delete(fn);
}

export function disconnect() {
  const ending = client;
  client = null;
  connecting = null;
  state = "disconnected";
  ending?.disconnect();
}
