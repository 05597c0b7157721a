/**
 * Heartbeats per second: authenticated heartbeats through the real server (auth, validation,
 * device actor, coalesced writes to PostgreSQL) against a baseline Elysia route validating the
 * same body, in one run on the same machine; GET /api/me with the same token shows what the
 * authentication alone allows, and the app's most trivial route against the same route in bare
 * Elysia what the app's global hooks cost (`trivialRoute.hooksUs`, server CPU µs per request). Every device is brought online first (its first heartbeat waits
 * for its write; `firstHeartbeatsPerSecond`), then the steady state is measured. With few
 * devices each heartbeats many times a second and the deferred writer merges a device's
 * heartbeats of one second into one row (server/devices/runtime.ts DEFERRED_WRITE_MS); more devices (--devices 20000) means more rows.
 *
 *   bun bench/devices-heartbeat.ts [--devices 1000] [--seconds 10] [--concurrency 64]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 * a fresh database is created and dropped.
 */
import { arg, closedLoop, connect, dropDatabase, freshBenchDatabase, seedDevices, spawnServer } from "./devices-load";

const DEVICES = arg("devices", 1000);
const SECONDS = arg("seconds", 10);
const CONCURRENCY = arg("concurrency", 64);

const body = JSON.stringify({ battery_level: 77, signal_strength: 60, is_in_doze_mode: false });

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
  // Every device's first heartbeat of a spell waits for its write (it brings the device online);
  // the measured run is the steady state that follows, every device already online.
  const t0 = performance.now();
  for (let i = 0; i < deviceIds.length; i += CONCURRENCY) {
    await Promise.all(
      deviceIds.slice(i, i + CONCURRENCY).map((_, k) =>
        fetch(req(server.url)(i + k)).then((r) => {
          if (r.status !== 200) throw new Error(`first heartbeat: ${r.status}`);
        }),
      ),
    );
  }
  const firstHeartbeatsPerSecond = Math.round(deviceIds.length / ((performance.now() - t0) / 1000));
  await closedLoop(req(baseline.url), { concurrency: CONCURRENCY, seconds: 2 });
  await closedLoop(req(server.url), { concurrency: CONCURRENCY, seconds: 2 });
  const base = await closedLoop(req(baseline.url), { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: baseline.proc.pid });
  const real = await closedLoop(req(server.url), { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: server.proc.pid });
  // The same token on GET /api/me: what authentication alone costs on this server.
  const me = await closedLoop(() => new Request(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } }), {
    concurrency: CONCURRENCY,
    seconds: SECONDS,
    serverPid: server.proc.pid,
  });
  // The app's most trivial route against the same route in bare Elysia: what the global hooks cost.
  const trivial = (base: string) => () => new Request(`${base}/.well-known/oauth-authorization-server`);
  await closedLoop(trivial(baseline.url), { concurrency: CONCURRENCY, seconds: 1 });
  await closedLoop(trivial(server.url), { concurrency: CONCURRENCY, seconds: 1 });
  const trivialBare = await closedLoop(trivial(baseline.url), { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: baseline.proc.pid });
  const trivialApp = await closedLoop(trivial(server.url), { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: server.proc.pid });
  const [online] = await sql<{ n: number }[]>`select count(*)::int as n from devices where is_online`;
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
        // Server CPU per request against the baseline's: the figure load from other processes barely moves.
        cpuRatio: real.cpuUsPerRequestNet && base.cpuUsPerRequestNet ? +(base.cpuUsPerRequestNet / real.cpuUsPerRequestNet).toFixed(3) : null,
        ratioToAuthOnly: +(real.rps / me.rps).toFixed(3),
        // Server CPU per request of the trivial route: the app's less bare Elysia's is the global hooks' cost.
        trivialRoute: {
          bare: trivialBare,
          app: trivialApp,
          hooksUs:
            trivialApp.cpuUsPerRequestNet !== undefined && trivialBare.cpuUsPerRequestNet !== undefined
              ? +(trivialApp.cpuUsPerRequestNet - trivialBare.cpuUsPerRequestNet).toFixed(1)
              : null,
        },
        firstHeartbeatsPerSecond,
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
