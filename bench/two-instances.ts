/**
 * Two instances vs one on the same machine: authenticated heartbeats per second against one
 * server process, then against two server processes (same database, same Redis prefix) with the
 * client sending its requests round-robin to them, at the same total concurrency.
 *
 *   bun bench/two-instances.ts [--devices 1000] [--seconds 10] [--concurrency 64]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (a fresh database is created and dropped);
 * REDIS_URL (default redis://127.0.0.1:6379) is shared by both instances under a unique prefix,
 * as a real two-instance deployment would be. Prints one JSON object.
 */
import { arg, closedLoop, connect, dropDatabase, freshBenchDatabase, seedDevices, spawnServer } from "./devices-load";

const DEVICES = arg("devices", 1000);
const SECONDS = arg("seconds", 10);
const CONCURRENCY = arg("concurrency", 64);
const body = JSON.stringify({ battery_level: 77, signal_strength: 60, is_in_doze_mode: false });

const dbUrl = await freshBenchDatabase("two");
const env = {
  DATABASE_URL: dbUrl,
  REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  REDIS_PREFIX: `simhost-bench-two-${crypto.randomUUID().slice(0, 8)}:`,
};
// One after the other: the first applies the migrations, the second finds them done.
const a = await spawnServer("server/main.ts", env, "/api/health");
const b = await spawnServer("server/main.ts", env, "/api/health").catch((e) => {
  a.proc.kill();
  throw e;
});
try {
  const sql = connect(dbUrl);
  const { token, deviceIds } = await seedDevices(sql, DEVICES);
  await sql.end();
  const heartbeat = (bases: string[]) => (i: number) =>
    new Request(`${bases[i % bases.length]}/api/byos/devices/${deviceIds[i % deviceIds.length]}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body,
    });
  // Warm both (JIT, caller cache, actors) before either measurement.
  await closedLoop(heartbeat([a.url, b.url]), { concurrency: CONCURRENCY, seconds: 2 });
  const one = await closedLoop(heartbeat([a.url]), { concurrency: CONCURRENCY, seconds: SECONDS });
  const two = await closedLoop(heartbeat([a.url, b.url]), { concurrency: CONCURRENCY, seconds: SECONDS });
  console.log(
    JSON.stringify(
      { devices: DEVICES, concurrency: CONCURRENCY, seconds: SECONDS, oneInstance: one, twoInstances: two, ratio: +(two.rps / one.rps).toFixed(3) },
      null,
      2,
    ),
  );
} finally {
  a.proc.kill();
  b.proc.kill();
  await Promise.all([a.proc.exited, b.proc.exited]);
  await dropDatabase(dbUrl);
}
