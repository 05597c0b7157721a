/**
 * SMS ingest: durable, acknowledged submissions per second through the real server with real
 * PostgreSQL (closed loop, as fast as it goes), latency at a fixed 5,000/s (open loop), and the
 * durable intake alone (group commit without HTTP and authentication) for comparison.
 *
 *   bun bench/devices-sms.ts [--devices 1000] [--seconds 10] [--concurrency 256] [--rate 5000] [--workers 4]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test).
 */
import { createSmsIngest } from "../server/devices/sms-ingest";
import { arg, closedLoop, connect, dropDatabase, freshBenchDatabase, openLoop, seedDevices, spawnServer } from "./devices-load";

const DEVICES = arg("devices", 1000);
const SECONDS = arg("seconds", 10);
const CONCURRENCY = arg("concurrency", 256);
const RATE = arg("rate", 5000);
// --workers 0: the server acknowledges and stores only, as an API instance beside separate
// worker instances would; by default it also processes what it stores, on the same 2 cores.
const WORKERS = arg("workers", 4);

const sms = (i: number) =>
  JSON.stringify({ from: "+15550001111", body: `bench message ${i} ${crypto.randomUUID()}`, message_id: crypto.randomUUID(), sim_slot: 1 });

async function intakeAlone(dbUrl: string, deviceIds: number[]) {
  const sql = connect(dbUrl);
  const ingest = createSmsIngest({ sql: sql as never, wake: () => {} });
  const end = performance.now() + SECONDS * 1000;
  const start = performance.now();
  let n = 0;
  await Promise.all(
    Array.from({ length: 2000 }, async () => {
      while (performance.now() < end) {
        const i = n++;
        await ingest.submit({
          deviceId: deviceIds[i % deviceIds.length]!,
          messageId: crypto.randomUUID(),
          simSlot: 1,
          from: "+15550002222",
          body: `direct ${i}`,
          receivedAt: new Date().toISOString(),
        });
      }
    }),
  );
  await sql.end();
  return { submissions: n, perSecond: Math.round(n / ((performance.now() - start) / 1000)) };
}

const dbUrl = await freshBenchDatabase("sms");
const server = await spawnServer("server/main.ts", { DATABASE_URL: dbUrl, WORKERS: String(WORKERS) }, "/api/health");
try {
  const sql = connect(dbUrl);
  const { token, deviceIds } = await seedDevices(sql, DEVICES);
  const req = (i: number) =>
    new Request(`${server.url}/api/byos/devices/${deviceIds[i % deviceIds.length]}/sms`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: sms(i),
    });
  await closedLoop(req, { concurrency: 64, seconds: 2 });
  const max = await closedLoop(req, { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: server.proc.pid });
  await Bun.sleep(2000);
  const fixed = await openLoop(req, { rate: RATE, seconds: SECONDS });
  const [stored] = await sql<{ n: number }[]>`select count(*)::int as n from device_sms`;
  const accepted = (max.statuses[202] ?? 0) + (fixed.statuses[202] ?? 0);
  server.proc.kill();
  await server.proc.exited;
  const direct = await intakeAlone(dbUrl, deviceIds);
  console.log(
    JSON.stringify(
      {
        devices: DEVICES,
        workers: WORKERS,
        http: { max, fixedRate: { rate: RATE, ...fixed } },
        storedRows: stored!.n,
        acceptedOverHttp: accepted,
        intakeWithoutHttp: direct,
      },
      null,
      2,
    ),
  );
  await sql.end();
} finally {
  server.proc.kill();
  await server.proc.exited;
  await dropDatabase(dbUrl);
}
