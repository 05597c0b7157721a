/**
 * A bare Bun server, the same-run baseline of three benchmarks; no authentication, no database, no
 * registry. Long-polling (bench/events-waiters.ts): it holds every `GET /hold` until
 * `POST /release`, then answers them all with a small JSON list; `GET /held` tells how many it
 * holds. Connections (bench/realtime-connections.ts): `/ws` upgrades to a WebSocket subscribed to
 * one topic. Waiting for a message across instances (bench/messages-next.ts): with
 * BASELINE_REDIS_URL and BASELINE_CHANNEL, `POST /publish` publishes on that Redis channel and every
 * such server subscribed to it releases what it holds when the message arrives (one Redis hop, as
 * the app's instances wake each other), through ioredis as the app's instances do.
 */
import Redis from "ioredis";

const held: ((r: Response) => void)[] = [];

function release() {
  const body = JSON.stringify({ data: [{ id: "evt_baseline", type: "webhook.test", data: {} }], meta: { next_cursor: "evt_baseline" } });
  for (const answer of held.splice(0)) answer(new Response(body, { headers: { "content-type": "application/json" } }));
}

const redisUrl = process.env.BASELINE_REDIS_URL;
const channel = process.env.BASELINE_CHANNEL ?? "";
const publisher = redisUrl ? new Redis(redisUrl) : undefined;
if (redisUrl) {
  const subscriber = new Redis(redisUrl);
  subscriber.on("message", release);
  await subscriber.subscribe(channel);
}

Bun.serve({
  port: Number(process.env.PORT),
  hostname: "127.0.0.1",
  idleTimeout: 0,
  websocket: { open: (ws) => void ws.subscribe("bench"), message: () => {} },
  fetch(request, server) {
    const path = new URL(request.url).pathname;
    if (path === "/ready") return new Response("ok");
    if (path === "/ws") return server.upgrade(request) ? undefined : new Response("upgrade", { status: 400 });
    if (path === "/held") return Response.json({ held: held.length });
    if (path === "/release") {
      release();
      return new Response(null, { status: 204 });
    }
    if (path === "/publish" && publisher) return publisher.publish(channel, "release").then(() => new Response(null, { status: 204 }));
    return new Promise<Response>((resolve) => held.push(resolve));
  },
});

// Stopped with SIGTERM (bench/devices-load.ts spawnServer): exit cleanly, so that a CPU profile
// asked for with BENCH_CPU_PROF is written, as the server's is.
process.on("SIGTERM", () => process.exit(0));
