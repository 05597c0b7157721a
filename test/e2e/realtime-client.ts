import { randomBytes } from "node:crypto";
import net from "node:net";
import Pusher from "pusher-js";
import { createTestContext, type TestContext } from "../helpers";

/** A port nobody listens on right now (the server is started on it with a matching PUBLIC_URL). */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** The app on a real port, PUBLIC_URL pointing at it, so the connection details are the real ones. */
export async function startServer(env: Record<string, string> = {}): Promise<TestContext & { baseUrl: string; port: number }> {
  const port = freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const ctx = await createTestContext({ PORT: String(port), PUBLIC_URL: baseUrl, ...env });
  ctx.app.listen({ port, hostname: "127.0.0.1" });
  return { ...ctx, baseUrl, port };
}

export async function stopServer(ctx: TestContext) {
  ctx.services.realtime.shutdown();
  await ctx.app.stop(true);
  await ctx.close();
}

/** Resolves with the first value `subscribe` hands to its callback, or fails after `ms`. */
export function awaitCallback<T>(what: string, subscribe: (done: (value: T) => void) => void, ms = 5000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    subscribe((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

export type ConnectionDetails = { key: string; ws_host: string; ws_port: number; force_tls: boolean; auth_endpoint: string };

/** Unmodified pusher-js, configured only from the connection details and a bearer token. */
export function connectPusher(baseUrl: string, details: ConnectionDetails, token: string) {
  return new Pusher(details.key, {
    cluster: "simhost",
    wsHost: details.ws_host,
    wsPort: details.ws_port,
    wssPort: details.ws_port,
    forceTLS: details.force_tls,
    enabledTransports: ["ws"],
    disableStats: true,
    channelAuthorization: {
      endpoint: new URL(details.auth_endpoint, baseUrl).toString(),
      transport: "ajax",
      headers: { Authorization: `Bearer ${token}` },
    },
  });
}

export async function connected(pusher: Pusher, ms = 5000): Promise<string> {
  if (pusher.connection.state === "connected") return pusher.connection.socket_id;
  await awaitCallback("pusher connected", (done) => pusher.connection.bind("connected", () => done(undefined)), ms);
  return pusher.connection.socket_id;
}

/** Subscribes and resolves once subscribed, or rejects with the subscription error's data. */
export function subscribed(pusher: Pusher, channelName: string, ms = 5000) {
  const channel = pusher.subscribe(channelName);
  return new Promise<typeof channel>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out subscribing to ${channelName}`)), ms);
    channel.bind("pusher:subscription_succeeded", () => {
      clearTimeout(timer);
      resolve(channel);
    });
    channel.bind("pusher:subscription_error", (e: unknown) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`subscription to ${channelName} refused`), { data: e }));
    });
  });
}

/** A bare WebSocket speaking the protocol by hand: for malformed frames and edge cases. */
export async function openRaw(url: string) {
  const ws = new WebSocket(url);
  const frames: any[] = [];
  const waiters: { test: (f: any) => boolean; resolve: (f: any) => void }[] = [];
  let closed: { code: number; reason: string } | null = null;
  const closeWaiters: ((c: { code: number; reason: string }) => void)[] = [];
  ws.onmessage = (e) => {
    const frame = JSON.parse(String(e.data));
    if (typeof frame.data === "string") {
      try {
        frame.data = JSON.parse(frame.data);
      } catch {}
    }
    const i = waiters.findIndex((w) => w.test(frame));
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(frame);
    else frames.push(frame);
  };
  ws.onclose = (e) => {
    closed = { code: e.code, reason: e.reason };
    for (const w of closeWaiters.splice(0)) w(closed);
  };
  const client = {
    ws,
    send: (frame: unknown) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)),
    /** The next frame matching `test` (already received or still to come). */
    next(test: (f: any) => boolean, ms = 5000): Promise<any> {
      const i = frames.findIndex(test);
      if (i >= 0) return Promise.resolve(frames.splice(i, 1)[0]);
      return awaitCallback("a frame", (done) => waiters.push({ test, resolve: done }), ms);
    },
    event: (name: string, ms?: number) => client.next((f) => f.event === name, ms),
    closed(ms = 5000): Promise<{ code: number; reason: string }> {
      if (closed) return Promise.resolve(closed);
      return awaitCallback("close", (done) => closeWaiters.push(done), ms);
    },
  };
  return client;
}

/**
 * A WebSocket client over a plain TCP socket, so a test can stop reading (`socket.pause()`) and
 * make the server's send queue grow, as a slow or stuck client does.
 */
export async function stalledClient(port: number, path: string) {
  const socket = net.connect(port, "127.0.0.1");
  await awaitCallback("tcp connect", (done) => socket.once("connect", () => done(undefined)));
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  let text = "";
  const listeners = new Set<() => void>();
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString("latin1");
    for (const l of listeners) l();
  });
  const waitFor = (needle: string) =>
    awaitCallback<void>(needle, (done) => {
      const check = () => {
        if (!text.includes(needle)) return;
        listeners.delete(check);
        done();
      };
      listeners.add(check);
      check();
    });
  await waitFor("pusher:connection_established");
  const socketId = /socket_id\\":\\"(\d+\.\d+)/.exec(text)?.[1];
  if (!socketId) throw new Error(`no socket_id in ${text}`);
  /** Client frames are masked (RFC 6455 5.3); text frames up to 64 KiB. */
  const send = (frame: unknown) => {
    const payload = Buffer.from(JSON.stringify(frame));
    const header =
      payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
    const mask = randomBytes(4);
    const masked = payload.map((b, i) => b ^ mask[i % 4]!);
    socket.write(Buffer.concat([header, mask, masked]));
  };
  return { socket, socketId, send, waitFor, text: () => text };
}
