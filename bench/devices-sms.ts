/**
 * SMS ingest: durable, acknowledged submissions per second through the real server with real
 * PostgreSQL (closed loop, as fast as it goes), latency at a fixed 5,000/s (open loop), and the
 * durable intake alone (group commit without HTTP and authentication) for comparison, and the
 * device_sms table's cost in a 100-row pgbench insert against a minimal row, and the same HTTP
 * loads against a bare Elysia route validating the same body, all in the same run.
 *
 *   bun bench/devices-sms.ts [--devices 1000] [--seconds 10] [--concurrency 256] [--rate 5000] [--workers 4]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test).
 */
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSmsIngest } from "../server/devices/sms-ingest";
import {
  arg,
  closedLoop,
  connect,
  dropDatabase,
  FETCH_CONNECTIONS,
  freshBenchDatabase,
  openLoop,
  seedDevices,
  smsLoad,
  spawnServer,
  submitToIntake,
} from "./devices-load";

const DEVICES = arg("devices", 1000);
const SECONDS = arg("seconds", 10);
const CONCURRENCY = arg("concurrency", 256);
const RATE = arg("rate", 5000);
// --workers 0: the server acknowledges and stores only, as an API instance beside separate
// worker instances would; by default it also processes what it stores, on the same 2 cores.
const WORKERS = arg("workers", 4);

async function intakeAlone(dbUrl: string, deviceIds: number[]) {
  const sql = connect(dbUrl);
  const ingest = createSmsIngest({ sql: sql as never, wake: () => {} });
  const end = performance.now() + SECONDS * 1000;
  const start = performance.now();
  const n = await submitToIntake(ingest, deviceIds, { concurrency: 2000, more: () => performance.now() < end, body: (i) => `direct ${i}` });
  await sql.end();
  return { submissions: n, perSecond: Math.round(n / ((performance.now() - start) / 1000)) };
}

/**
 * The table's own cost, judged against a baseline of the same run: pgbench inserting 100 rows a
 * transaction (4 clients) into an empty copy of device_sms (`like ... including all`: its
 * generated key, indexes and defaults; it has no trigger or foreign key of its own) and into an
 * empty minimal table of the same columns (its primary key only), alternated, `rounds` times
 * each; null without pgbench on the PATH.
 */
async function tableCost(dbUrl: string, seconds: number, rounds = 2) {
  if (!Bun.which("pgbench")) return null;
  const sql = connect(dbUrl);
  await sql`create table sms_minimal (id bigint generated always as identity primary key, device_id bigint not null, message_id uuid not null,
    sim_slot integer, from_number text not null, body text not null, received_at timestamptz not null)`;
  // device_sms as migrated (columns, generated key, indexes, defaults), empty like the minimal table.
  await sql`create table sms_device_copy (like device_sms including all)`;
  await sql.end();
  const insert = (table: string) => `insert into ${table} (device_id, message_id, sim_slot, from_number, body, received_at)
select 1 + (random()*999)::int, gen_random_uuid(), 1, '+15550001111',
       'hello world this is an ordinary text message of some sixty chars ' || g || random(), now()
from generate_series(1,100) g;
`;
  const rowsPerSecond = async (table: string) => {
    const script = join(tmpdir(), `simhost-bench-${table}-${process.pid}.sql`);
    await Bun.write(script, insert(table));
    const run = Bun.spawnSync(["pgbench", "-n", "-c", "4", "-j", "2", "-T", String(seconds), "-f", script, dbUrl], { stderr: "ignore" });
    rmSync(script, { force: true });
    const tps = Number(run.stdout.toString().match(/tps = ([0-9.]+)/)?.[1] ?? Number.NaN);
    return Math.round(tps * 100);
  };
  const minimal: number[] = [];
  const table: number[] = [];
  for (let i = 0; i < rounds; i++) {
    minimal.push(await rowsPerSecond("sms_minimal"));
    table.push(await rowsPerSecond("sms_device_copy"));
  }
  const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  return { minimalRowsPerSecond: minimal, deviceSmsRowsPerSecond: table, ratio: +(mean(table) / mean(minimal)).toFixed(3), deviceSmsMean: mean(table) };
}

/**
 * With workers, waits (polling, up to two minutes) until every stored SMS is processed; returns
 * how many were waiting when called and how long they took. Without workers nothing processes them: null.
 */
async function drain(sql: ReturnType<typeof connect>) {
  if (WORKERS === 0) return null;
  const waiting = async () => (await sql<{ n: number }[]>`select count(*)::int as n from device_sms where message_row_id is null`)[0]!.n;
  const start = performance.now();
  const backlog = await waiting();
  for (let left = backlog; left > 0; left = await waiting()) {
    if (performance.now() - start > 120_000) throw new Error(`${left} SMS still unprocessed after 120 s`);
    await Bun.sleep(100);
  }
  return { backlog, drainMs: Math.round(performance.now() - start) };
}

/**
 * The HTTP figures' baseline: the same closed and open loops (same generator, connections and
 * bodies) against a bare Elysia route that validates the body with the same schema and answers
 * 202 with the same shape, with no authentication, actor or database (bench/devices-baseline-server.ts).
 */
async function bareRoute(token: string, deviceIds: number[]) {
  const bare = await spawnServer("bench/devices-baseline-server.ts", {}, "/ready");
  try {
    const req = smsLoad(bare.url, token, deviceIds);
    await closedLoop(req, { concurrency: 64, seconds: 2 });
    const max = await closedLoop(req, { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: bare.proc.pid });
    const fixed = await openLoop(req, { rate: RATE, seconds: SECONDS, processes: Math.ceil(CONCURRENCY / FETCH_CONNECTIONS) });
    return { max, fixedRate: { rate: RATE, ...fixed } };
  } finally {
    bare.proc.kill();
    await bare.proc.exited;
  }
}

const dbUrl = await freshBenchDatabase("sms");
const server = await spawnServer("server/main.ts", { DATABASE_URL: dbUrl, WORKERS: String(WORKERS) }, "/api/health");
try {
  const sql = connect(dbUrl);
  const { token, deviceIds } = await seedDevices(sql, DEVICES);
  const req = smsLoad(server.url, token, deviceIds);
  await closedLoop(req, { concurrency: 64, seconds: 2 });
  const max = await closedLoop(req, { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: server.proc.pid });
  // The closed loop stores faster than the same cores process: the fixed-rate run starts once its
  // backlog is processed, so it measures 5,000/s with processing keeping pace, not 5,000/s beside
  // the closed loop's leftovers. Whether processing kept pace during it is reported after it.
  const afterMax = await drain(sql);
  await Bun.sleep(1000);
  const fixed = await openLoop(req, { rate: RATE, seconds: SECONDS, processes: Math.ceil(CONCURRENCY / FETCH_CONNECTIONS) });
  const afterFixed = await drain(sql);
  const [stored] = await sql<{ n: number }[]>`select count(*)::int as n from device_sms`;
  const accepted = (max.statuses[202] ?? 0) + (fixed.statuses[202] ?? 0);
  server.proc.kill();
  await server.proc.exited;
  const direct = await intakeAlone(dbUrl, deviceIds);
  const pgbench = await tableCost(dbUrl, Math.min(SECONDS, 5));
  const bare = await bareRoute(token, deviceIds);
  console.log(
    JSON.stringify(
      {
        devices: DEVICES,
        workers: WORKERS,
        http: { max, fixedRate: { rate: RATE, ...fixed } },
        // With workers: SMS stored but not yet processed when each loop ended, and how long they took.
        processing: WORKERS > 0 ? { afterClosedLoop: afterMax, afterFixedRate: afterFixed } : null,
        storedRows: stored!.n,
        acceptedOverHttp: accepted,
        intakeWithoutHttp: direct,
        // device_sms against a minimal row in a 100-row pgbench insert, alternated in this run.
        pgbench,
        // The same loads against a bare Elysia route validating the same body, in this run.
        baseline: { bareValidatedRoute: bare },
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
