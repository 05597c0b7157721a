/**
 * 10,000 concurrent WebSocket connections, each subscribed to a private channel, on one server
 * process; prints the server's resident memory per connection, beside the same-run baseline: a
 * bare Bun server (bench/events-baseline-server.ts) holding as many sockets, each subscribed to a
 * topic.
 *
 *   bun bench/realtime-connections.ts [connections=10000]
 *
 * simhost runs as its own process (`bun server/main.ts` on a fresh PostgreSQL database of
 * BENCH_DATABASE_URL's server, no Redis) so its memory is measured alone. Each connection is
 * authorized through the auth endpoint as pusher-js does it, on 100 organizations' channels of one
 * user. No GC is forced in either server: the figures include garbage not yet collected.
 */
import { readFileSync } from "node:fs";
import { connect, dropDatabase, freshBenchDatabase, spawnServer } from "./devices-load";
import { seedChannels, subscribeOne } from "./realtime-subscribe";

const METRICS_TOKEN = "bench-metrics-token-0123456";
const N = Number(process.argv[2] ?? 10_000);
const KEY = "benchkey";
const BATCH = 500;

const rssBytes = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;

/** Opens N connections with `open`, BATCH at a time; the server's RSS before and while they are held, and the time taken. */
async function hold(pid: number, open: (i: number) => Promise<WebSocket>, whileHeld?: () => Promise<void>) {
  // Let start-up allocations settle before the baseline.
  await Bun.sleep(1000);
  const before = rssBytes(pid);
  const started = performance.now();
  const sockets: WebSocket[] = [];
  for (let i = 0; i < N; i += BATCH) sockets.push(...(await Promise.all(Array.from({ length: Math.min(BATCH, N - i) }, (_, j) => open(i + j)))));
  const seconds = (performance.now() - started) / 1000;
  await Bun.sleep(2000);
  const after = rssBytes(pid);
  await whileHeld?.();
  for (const ws of sockets) ws.close();
  return {
    connect_seconds: Math.round(seconds * 10) / 10,
    rss_before_mib: Math.round(before / 2 ** 20),
    rss_after_mib: Math.round(after / 2 ** 20),
    bytes_per_connection: Math.round((after - before) / N),
  };
}

const databaseUrl = await freshBenchDatabase("connections");
const simhost = await spawnServer(
  "server/main.ts",
  // Every connection comes from 127.0.0.1: the per-address cap raised past the count.
  {
    DATABASE_URL: databaseUrl,
    PUSHER_APP_KEY: KEY,
    PUSHER_APP_SECRET: "bench-secret-0123456789",
    METRICS_TOKEN,
    WORKERS: "0",
    WS_MAX_CONNECTIONS_PER_ADDRESS: "1000000",
  },
  "/api/health",
);
const sql = connect(databaseUrl);
const { token, organizations } = await seedChannels(sql, 99);
await sql.end();
const port = Number(new URL(simhost.url).port);
let gauge = 0;
const server = await hold(
  simhost.proc.pid,
  (i) => subscribeOne(port, KEY, token, `private-organization.${organizations[i % organizations.length]}`),
  async () => {
    const metrics = await (await fetch(`${simhost.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    gauge = Number(/^simhost_ws_connections (\d+)/m.exec(metrics)?.[1]);
  },
);
simhost.proc.kill("SIGTERM");
await simhost.proc.exited;
await dropDatabase(databaseUrl);

const bare = await spawnServer("bench/events-baseline-server.ts", {}, "/ready");
const wsUrl = `${bare.url.replace("http", "ws")}/ws`;
const baseline = await hold(
  bare.proc.pid,
  () =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(wsUrl);
      ws.onopen = () => resolve(ws);
      ws.onerror = () => reject(new Error("socket error"));
    }),
);
bare.proc.kill();

console.log(
  JSON.stringify(
    {
      connections: N,
      server_connections_gauge: gauge,
      connect_seconds: server.connect_seconds,
      server_rss_before_mib: server.rss_before_mib,
      server_rss_after_mib: server.rss_after_mib,
      server_bytes_per_connection: server.bytes_per_connection,
      baseline_bare_bun: baseline,
    },
    null,
    2,
  ),
);
process.exit(0);
