/**
 * A bare Bun server, the same-run baseline of two benchmarks; no authentication, no database, no
 * registry. Long-polling (bench/events-waiters.ts): it holds every `GET /hold` until
 * `POST /release`, then answers them all with a small JSON list; `GET /held` tells how many it
 * holds. Connections (bench/realtime-connections.ts): `/ws` upgrades to a WebSocket subscribed to
 * one topic.
 */
const held: ((r: Response) => void)[] = [];

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
      const body = JSON.stringify({ data: [{ id: "evt_baseline", type: "webhook.test", data: {} }], meta: { next_cursor: "evt_baseline" } });
      for (const answer of held.splice(0)) answer(new Response(body, { headers: { "content-type": "application/json" } }));
      return new Response(null, { status: 204 });
    }
    return new Promise<Response>((resolve) => held.push(resolve));
  },
});

// Stopped with SIGTERM (bench/devices-load.ts spawnServer): exit cleanly, so that a CPU profile
// asked for with BENCH_CPU_PROF is written, as the server's is.
process.on("SIGTERM", () => process.exit(0));
