/**
 * 10,000 concurrent WebSocket connections, each subscribed to a private channel, on one server
 * process; prints the server's resident memory per connection.
 *
 *   bun bench/realtime-connections.ts [connections=10000]
 *
 * The server runs as its own process (`bun server/main.ts` on a fresh PostgreSQL database of
 * BENCH_DATABASE_URL's server, no Redis unless REDIS_URL is set) so its memory is measured alone.
 * Each connection is authorized through the auth endpoint as pusher-js does it, on 100
 * organizations' channels of one user.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, dropDatabase, freshBenchDatabase } from "./devices-load";
import { seedChannels, subscribeOne } from "./realtime-subscribe";

const METRICS_TOKEN = "bench-metrics-token-0123456";

const N = Number(process.argv[2] ?? 10_000);
const ROOT = join(import.meta.dir, "..");
const KEY = "benchkey";
const SECRET = "bench-secret-0123456789";

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

async function startServer(databaseUrl: string) {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  const proc = Bun.spawn([process.execPath, "server/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      PUSHER_APP_KEY: KEY,
      PUSHER_APP_SECRET: SECRET,
      METRICS_TOKEN,
      DATA_DIR: mkdtempSync(join(tmpdir(), "simhost-bench-")),
      DATABASE_URL: databaseUrl,
      WORKERS: "0",
      LOG_LEVEL: "warn",
    } as Record<string, string>,
    stdout: "ignore",
    stderr: "inherit",
  });
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/api/health`).then(
      (r) => r.status < 600,
      () => false,
    );
    if (ok) return { proc, port };
    await Bun.sleep(200);
  }
  throw new Error("server did not start");
}

const databaseUrl = await freshBenchDatabase("connections");
const { proc, port } = await startServer(databaseUrl);
const sql = connect(databaseUrl);
const { token, organizations } = await seedChannels(sql, 99);
await sql.end();
// Let start-up allocations settle before the baseline.
Bun.gc(true);
await Bun.sleep(1000);
const before = rssBytes(proc.pid);
const started = performance.now();
const sockets: WebSocket[] = [];
const BATCH = 500;
for (let i = 0; i < N; i += BATCH) {
  const batch = [];
  for (let j = i; j < Math.min(N, i + BATCH); j++)
    batch.push(subscribeOne(port, KEY, token, `private-organization.${organizations[j % organizations.length]}`));
  sockets.push(...(await Promise.all(batch)));
}
const connectSeconds = (performance.now() - started) / 1000;
await Bun.sleep(2000);
const after = rssBytes(proc.pid);
const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
const gauge = /^simhost_ws_connections (\d+)/m.exec(metrics)?.[1];

console.log(
  JSON.stringify(
    {
      connections: N,
      server_connections_gauge: Number(gauge),
      connect_seconds: Math.round(connectSeconds * 10) / 10,
      server_rss_before_mib: Math.round(before / 1048576),
      server_rss_after_mib: Math.round(after / 1048576),
      server_bytes_per_connection: Math.round((after - before) / N),
    },
    null,
    2,
  ),
);
for (const ws of sockets) ws.close();
proc.kill("SIGTERM");
await proc.exited;
await dropDatabase(databaseUrl);
process.exit(0);
