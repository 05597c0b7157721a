/**
 * The long-poll benchmark's baseline: a bare Bun server that holds every `GET /hold` until
 * `POST /release`, then answers them all with a small JSON list; no authentication, no database,
 * no registry. `GET /held` tells how many it holds.
 */
const held: ((r: Response) => void)[] = [];

Bun.serve({
  port: Number(process.env.PORT),
  hostname: "127.0.0.1",
  idleTimeout: 0,
  fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === "/ready") return new Response("ok");
    if (path === "/held") return Response.json({ held: held.length });
    if (path === "/release") {
      const body = JSON.stringify({ data: [{ id: "evt_baseline", type: "webhook.test", data: {} }], meta: { next_cursor: "evt_baseline" } });
      for (const answer of held.splice(0)) answer(new Response(body, { headers: { "content-type": "application/json" } }));
      return new Response(null, { status: 204 });
    }
    return new Promise<Response>((resolve) => held.push(resolve));
  },
});
