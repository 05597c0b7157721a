import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createJobQueue, JOB_REMOVED, type Job, type JobQueue } from "../../server/jobs/queue";
import type { QueueSpec } from "../../server/jobs/registry";
import { createLogger } from "../../server/lib/logger";
import { waitFor } from "../fixtures-devices";
import { sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

/**
 * A queue of this test's own, in a registry of its own (unique queue names, so the shared
 * database's other jobs stay out of it).
 */
function queue(spec: Partial<QueueSpec> = {}) {
  const name = `test.${crypto.randomUUID()}`;
  const queues = { [name]: { description: "test", producers: ["test"], handler: "test", ...spec } };
  const jobs = createJobQueue({ sql: ctx.sql, logger: createLogger("silent"), workerId: `test-${name}`, pollMs: 20, queues });
  const left = async () => (await ctx.sql<{ n: number }[]>`select count(*)::int as n from jobs where queue = ${name}`)[0]!.n;
  return { name, jobs, left };
}

const started: JobQueue[] = [];
afterAll(async () => {
  await Promise.all(started.map((q) => q.stop()));
});

describe("job queue batches", () => {
  test("registerBatch hands a backlog over in batches of at most batchSize, and removes every job it ran", async () => {
    const q = queue({ batchSize: 10, concurrency: 2 });
    for (let i = 0; i < 25; i++) await q.jobs.enqueue(q.name, { n: i });
    const batches: number[][] = [];
    q.jobs.registerBatch<{ n: number }>(q.name, async (jobs) => void batches.push(jobs.map((j) => j.payload.n)));
    q.jobs.start();
    started.push(q.jobs);
    expect(await waitFor(async () => (await q.left()) === 0)).toBe(true);
    expect(batches.every((b) => b.length <= 10)).toBe(true);
    expect(batches.length).toBeLessThan(25);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i));
  });

  /** The jobs of a queue as the test reads them after its failures. */
  const failedJobs = (name: string) =>
    ctx.sql<{ n: number; attempts: number; last_error: string | null; locked_by: string | null; later: boolean; dead: boolean }[]>`
      select (payload->>'n')::int as n, attempts, last_error, locked_by, run_at > now() + interval '30 seconds' as later, dead
      from jobs where queue = ${name} order by id`;

  test("a batch whose one job cannot succeed: the batch is run again in halves, the others are done and that one alone is retried", async () => {
    const q = queue({ batchSize: 10, concurrency: 1 });
    for (let i = 0; i < 10; i++) await q.jobs.enqueue(q.name, { n: i });
    const calls: number[][] = [];
    q.jobs.registerBatch<{ n: number }>(
      q.name,
      async (jobs) => {
        calls.push(jobs.map((j) => j.payload.n));
        if (jobs.some((j) => j.payload.n === 6)) throw new Error("job 6 is poison");
      },
      { backoff: () => 60_000 },
    );
    q.jobs.start();
    started.push(q.jobs);
    expect(await waitFor(async () => (await q.left()) === 1 && (await failedJobs(q.name))[0]?.locked_by === null)).toBe(true);
    await q.jobs.stop();
    expect([...(await failedJobs(q.name))]).toEqual([{ n: 6, attempts: 1, last_error: "job 6 is poison", locked_by: null, later: true, dead: false }]);
    // The whole batch, then halves down to job 6; the jobs beside it are done in the halves that pass.
    expect(calls).toEqual([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [5, 6, 7], [5, 6], [5], [6], [7], [8, 9]]);
  });

  test("a batch failing for every job: each fails alone, with its attempt and error, none is lost", async () => {
    const q = queue({ batchSize: 10, concurrency: 1 });
    for (let i = 0; i < 3; i++) await q.jobs.enqueue(q.name, { n: i });
    let calls = 0;
    q.jobs.registerBatch(
      q.name,
      async () => {
        calls++;
        throw new Error("boom");
      },
      { backoff: () => 60_000 },
    );
    q.jobs.start();
    started.push(q.jobs);
    expect(await waitFor(async () => (await failedJobs(q.name)).every((j) => j.last_error === "boom" && j.locked_by === null))).toBe(true);
    await q.jobs.stop();
    expect(calls).toBe(5);
    expect([...(await failedJobs(q.name))]).toEqual([0, 1, 2].map((n) => ({ n, attempts: 1, last_error: "boom", locked_by: null, later: true, dead: false })));
  });

  test("a job past its last attempt is dead, and dates its death (run_at) at that attempt, not a backoff later", async () => {
    const q = queue({ maxAttempts: 1 });
    await q.jobs.enqueue(q.name, { n: 1 });
    q.jobs.register(
      q.name,
      async () => {
        throw new Error("never");
      },
      { backoff: () => 3_600_000 },
    );
    q.jobs.start();
    started.push(q.jobs);
    expect(await waitFor(async () => (await failedJobs(q.name))[0]?.dead === true)).toBe(true);
    await q.jobs.stop();
    const [row] = await ctx.sql<{ age: number }[]>`select extract(epoch from now() - run_at)::float8 as age from jobs where queue = ${q.name}`;
    expect(Math.abs(row!.age)).toBeLessThan(60);
  });

  test("a batch failing because the database is away is retried as a whole, not in halves", async () => {
    const q = queue({ batchSize: 10, concurrency: 1 });
    for (let i = 0; i < 4; i++) await q.jobs.enqueue(q.name, { n: i });
    let calls = 0;
    q.jobs.registerBatch(
      q.name,
      async () => {
        calls++;
        throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      },
      { backoff: () => 60_000 },
    );
    q.jobs.start();
    started.push(q.jobs);
    expect(await waitFor(async () => (await failedJobs(q.name)).every((j) => j.last_error !== null && j.locked_by === null))).toBe(true);
    await q.jobs.stop();
    expect(calls).toBe(1);
  });

  test("a handler that removed its own job returns JOB_REMOVED; the queue leaves it at that", async () => {
    const q = queue();
    await q.jobs.enqueue(q.name, {});
    const seen: Job[] = [];
    q.jobs.register<Record<string, unknown>>(q.name, async (job) => {
      seen.push(job);
      await ctx.sql`delete from jobs where id = ${job.id}`;
      return JOB_REMOVED;
    });
    q.jobs.start();
    started.push(q.jobs);
    expect(await waitFor(async () => seen.length === 1 && (await q.left()) === 0)).toBe(true);
  });
});

describe("job queue polls", () => {
  test("a poll claims the due jobs of every queue it handles in one statement", async () => {
    const names = [1, 2, 3].map(() => `test.${crypto.randomUUID()}`);
    const queues = Object.fromEntries(names.map((name) => [name, { description: "test", producers: ["test"], handler: "test" }]));
    let claims = 0;
    const sql = new Proxy(ctx.sql, {
      apply(target, self, args) {
        if (Array.isArray(args[0]) && args[0].join("").includes("for update skip locked")) claims++;
        return Reflect.apply(target, self, args);
      },
    });
    const jobs = createJobQueue({ sql, logger: createLogger("silent"), workerId: `test-${names[0]}`, pollMs: 20, queues });
    for (const name of names) await jobs.enqueue(name, { name });
    // The claims made by the time each queue's handler runs: the first poll's one, for all three.
    const claimsWhenRun = new Map<string, number>();
    for (const name of names) jobs.register<{ name: string }>(name, async (job) => void claimsWhenRun.set(job.payload.name, claims));
    jobs.start();
    started.push(jobs);
    expect(await waitFor(async () => claimsWhenRun.size === 3)).toBe(true);
    expect([...claimsWhenRun.values()]).toEqual([1, 1, 1]);
  });
});
