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

/** What the views listen to, so a connection built anew (after a 4009) binds them again. */
type Listening = { channelName: string; event: string; handler: (data: never) => void; channel: Channel | null };
const listening = new Set<Listening>();

function attach(p: Pusher, l: Listening) {
  l.channel = p.channel(l.channelName) ?? p.subscribe(l.channelName);
  l.channel.bind(l.event, l.handler);
}

/**
 * The server ended the connection as unauthorized (4009) while this tab's session still stands:
 * one subscription's grant was revoked (the user left the organization it was for). A new
 * connection, with every view's channels authorized again, and the views told to catch up.
 */
function rebuild(ended: Pusher) {
  if (client !== ended) return;
  client = null;
  connecting = null;
  ended.disconnect();
  realtime(true)
    .then((p) => {
      for (const l of listening) attach(p, l);
    })
    .catch(() => {});
}

async function connect(afterDrop: boolean): Promise<Pusher> {
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
  let dropped = afterDrop;
  let closeCode: number | undefined;
  // pusher-js hands the server's pusher:error as `data`, and the close that follows as `error.data`.
  type ErrorEvent = { data?: { code?: number }; error?: { data?: { code?: number } } };
  pusher.connection.bind("error", (e: ErrorEvent) => void (closeCode = e?.data?.code ?? e?.error?.data?.code ?? closeCode));
  pusher.connection.bind("state_change", ({ current }: { current: string }) => {
    state = current;
    for (const fn of stateListeners) fn(current);
    if (current === "connected" && dropped) {
      dropped = false;
      for (const fn of reconnectListeners) fn();
    }
    if (current === "unavailable" || current === "connecting" || current === "disconnected") dropped = true;
    // Disconnected without our asking: the server ended the connection for good (pusher-js does
    // not come back after 4000-4099), as it does when the session is revoked (4009). Asking who
    // we are answers 401 then, which signs this tab out; a session that still stands had one
    // subscription's grant revoked (4009): a new connection. Otherwise the header says "Disconnected".
    if (current === "disconnected" && client === pusher)
      void fetchIdentity()
        .then(() => closeCode === 4009 && rebuild(pusher))
        .catch(() => {});
  });
  return pusher;
}

export function realtime(afterDrop = false): Promise<Pusher> {
  if (client) return Promise.resolve(client);
  // A failed attempt is not kept: the next caller tries again (it answered every later caller
  // with the same failure, so a tab whose organization was gone at that moment stayed offline).
  connecting ??= connect(afterDrop).then(
    (p) => (client = p),
    (e) => {
      connecting = null;
      throw e;
    },
  );
  return connecting;
}

/** Subscribes `handler` to `event` on `channelName`; the returned function undoes it. */
export function listen<T>(channelName: string, event: string, handler: (data: T) => void): () => void {
  const l: Listening = { channelName, event, handler: handler as (data: never) => void, channel: null };
  listening.add(l);
  realtime()
    .then((p) => {
      if (listening.has(l) && l.channel === null) attach(p, l);
    })
    .catch(() => {});
  return () => {
    listening.delete(l);
    l.channel?.unbind(event, l.handler);
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
  listening.clear();
  const ending = client;
  client = null;
  connecting = null;
  state = "disconnected";
  ending?.disconnect();
}
