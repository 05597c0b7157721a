import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Database } from "../../server/db/client";
import { openEmptyDatabase } from "../helpers";

// The driver's pool keeps its connections in queues (postgres.js src/queue.js, patched in
// patches/postgres@3.4.9.patch). A queue that is never emptied, as the queue of idle connections
// was while the pool used them in turn, kept a slot for every connection it ever handed out, and
// each query's move between queues searched them all: the cost of a query and the memory grew
// with every query the server had run (48-52 µs a query over the first 50,000, 172-185 µs by
// 400,000; bench/db-pool.ts).
describe("database pool", () => {
  let db: Database;
  beforeAll(async () => {
    db = await openEmptyDatabase();
  }, 60_000);
  afterAll(() => db?.close());

  test("its queues stay as small as the pool however many queries it has run", async () => {
    // Every connection opened, then one query at a time: the others wait idle in the queue.
    await Promise.all(Array.from({ length: 24 }, () => db.sql`select pg_sleep(0.02)`));
    // What the driver's queues search when a connection moves: the array's length, and the span searched.
    const indexOf = Array.prototype.indexOf;
    let longest = 0;
    let widest = 0;
    Array.prototype.indexOf = function (this: unknown[], x: unknown, from?: number) {
      if (typeof x === "object" && x !== null && "queue" in x) {
        longest = Math.max(longest, this.length);
        widest = Math.max(widest, this.length - (from ?? 0));
      }
      return indexOf.call(this, x, from);
    } as typeof indexOf;
    try {
      for (let i = 0; i < 3000; i++) await db.sql`select 1`;
    } finally {
      Array.prototype.indexOf = indexOf;
    }
    expect(longest).toBeGreaterThan(0);
    expect(widest).toBeLessThanOrEqual(32);
    expect(longest).toBeLessThan(2000);
  }, 60_000);

  // The pool is a stack (patched): a query takes the most recently idle connection, so work that
  // needs one connection at a time runs on one, its backend warm, where a round robin spread it
  // over all of them (docs/benchmarks.md "A server's first seconds"). Embedded: one session behind
  // every connection, so one backend pid either way.
  test("one query at a time runs on one connection, however many are open", async () => {
    await db.warm(); // every connection of the pool open and idle
    const pids = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const [row] = await db.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      pids.add(row!.pid);
    }
    expect(pids.size).toBe(1);
  }, 60_000);
});
