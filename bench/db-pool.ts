/**
 * The server's database pool over a long life: wall µs per query, by slices, over `--queries`
 * `select 1` run through the server's own pool (server/db/client.ts openDatabase) of `--max`
 * connections, all opened first, `--concurrency` at a time: fewer than the pool, so idle
 * connections wait in its queue and are used in turn, as in a server between bursts. Judged on
 * the last slice against the first of the same run: about 1 when a query costs the same however
 * many ran before it. postgres.js 3.4.9 without patches/postgres@3.4.9.patch: 3.4-3.8 by 400,000
 * queries (docs/benchmarks.md, session of 2026-11-28).
 *
 *   bun bench/db-pool.ts [--queries 400000] [--slice 50000] [--max 10] [--concurrency 2]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 * only `select 1` and `pg_sleep` run there. Prints a line per slice, then one JSON object.
 */
import { openDatabase } from "../server/db/client";
import { arg, load } from "./devices-load";

const QUERIES = arg("queries", 400_000);
const SLICE = arg("slice", 50_000);
const MAX = arg("max", 10);
const CONCURRENCY = arg("concurrency", 2);

const loadBefore = load();
const db = await openDatabase({ DATABASE_URL: process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test", DATA_DIR: "/tmp" }, MAX);
try {
  // Every connection opened: more sleepers at once than the pool holds.
  await Promise.all(Array.from({ length: MAX * 2 }, () => db.sql`select pg_sleep(0.05)`));
  const slices: number[] = [];
  let done = 0;
  let sliceStart = performance.now();
  async function worker() {
    while (done < QUERIES) {
      const n = ++done;
      await db.sql`select 1`;
      if (n % SLICE === 0) {
        const now = performance.now();
        slices.push(+(((now - sliceStart) * 1000) / SLICE).toFixed(1));
        console.log(`${n} queries: ${slices.at(-1)} µs a query over the last ${SLICE}`);
        sliceStart = now;
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(
    JSON.stringify(
      {
        queries: QUERIES,
        slice: SLICE,
        max: MAX,
        concurrency: CONCURRENCY,
        usPerQueryBySlice: slices,
        lastToFirst: slices.length > 1 ? +(slices.at(-1)! / slices[0]!).toFixed(2) : null,
        loadavgBefore: loadBefore,
        loadavgAfter: load(),
      },
      null,
      2,
    ),
  );
} finally {
  await db.close();
}
