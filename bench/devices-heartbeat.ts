/**
 * Heartbeats per second: authenticated heartbeats through the real server (auth, validation,
 * device actor, coalesced writes to PostgreSQL) against a baseline Elysia route validating the
 * same body, in one run on the same machine; GET /api/me with the same token shows what the
 * authentication alone (two queries per request) allows.
 *
 *   bun bench/devices-heartbeat.ts [--devices 1000] [--seconds 10] [--concurrency 64]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 * a fresh database is created and dropped.
 */
import { loadConfig } from "../server/config";
import { createServices } from "../server/services";
import { arg, closedLoop, connect, dropDatabase, freshBenchDatabase, seedDevices, spawnServer } from "./devices-load";

const DEVICES = arg("devices", 1000);
const SECONDS = arg("seconds", 10);
const CONCURRENCY = arg("concurrency", 64);

const body = JSON.stringify({ battery_level: 77, signal_strength: 60, is_in_doze_mode: false });

/** The device part alone, in this process: actor + coalesced write, no HTTP, no authentication. */
async function heartbeatCore(url: string, deviceIds: number[]) {
  const services = await createServices(loadConfig({ DATABASE_URL: url, LOG_LEVEL: "error" }));
  const { actors } = services.devices;
  const end = performance.now() + SECONDS * 1000;
  const start = performance.now();
  let n = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      for (let i = w; performance.now() < end; i += CONCURRENCY) {
        const state = (await actors.get(deviceIds[i % deviceIds.length]!))!;
        await actors.heartbeat(state, { doze: false, batteryLevel: 77 });
        n++;
      }
    }),
  );
  const perSecond = Math.round(n / ((performance.now() - start) / 1000));
  await services.close();
  return { heartbeats: n, perSecond };
}

const dbUrl = await freshBenchDatabase("hb");
const baseline = await spawnServer("bench/devices-baseline-server.ts", {}, "/ready");
const server = await spawnServer("server/main.ts", { DATABASE_URL: dbUrl }, "/api/health");
try {
  const sql = connect(dbUrl);
  const { token, deviceIds } = await seedDevices(sql, DEVICES);
  const req = (base: string) => (i: number) =>
    new Request(`${base}/api/byos/devices/${deviceIds[i % deviceIds.length]}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body,
    });
  await closedLoop(req(baseline.url), { concurrency: CONCURRENCY, seconds: 2 });
  await closedLoop(req(server.url), { concurrency: CONCURRENCY, seconds: 2 });
  const base = await closedLoop(req(baseline.url), { concurrency: CONCURRENCY, seconds: SECONDS });
  const real = await closedLoop(req(server.url), { concurrency: CONCURRENCY, seconds: SECONDS });
  // The same token on GET /api/me: what authentication alone costs on this server.
  const me = await closedLoop(() => new Request(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } }), {
    concurrency: CONCURRENCY,
    seconds: SECONDS,
  });
  const [online] = await sql<{ n: number }[]>`select count(*)::int as n from devices where is_online`;
  server.proc.kill();
  const core = await heartbeatCore(dbUrl, deviceIds);
  console.log(
    JSON.stringify(
      {
        devices: DEVICES,
        concurrency: CONCURRENCY,
        seconds: SECONDS,
        baseline: base,
        heartbeat: real,
        authOnly: me,
        ratio: +(real.rps / base.rps).toFixed(3),
        ratioToAuthOnly: +(real.rps / me.rps).toFixed(3),
        devicePartAlone: core,
        devicesOnline: online!.n,
      },
      null,
      2,
    ),
  );
  await sql.end();
} finally {
  baseline.proc.kill();
  server.proc.kill();
  await Promise.all([baseline.proc.exited, server.proc.exited]);
  await dropDatabase(dbUrl);
}
