import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createJobQueue, type Job, type JobQueue, RetryAfter } from "../../server/jobs/queue";
import type { QueueSpec } from "../../server/jobs/registry";
import { createLogger } from "../../server/lib/logger";
import { lockHistory } from "../../server/numbers/lock-store";
import type { Delivery } from "../../server/realtime/hub";
import { createFakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { clockedContext } from "../fixtures-devices";
import { createSharedNumber, eventually } from "../fixtures-numbers";
import { sharedTestContext, type TestContext } from "../helpers";

const S = 1000;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

/** A queue of the test's own on a fake clock; a marker job (due at once) shows that a claim at the clock's time has happened. */
function clockedQueue(leaseSeconds?: number) {
  const clock = createFakeClock(Date.now());
  const name = `test.${crypto.randomUUID()}`;
  const spec: QueueSpec = { description: "test", producers: ["test"], handler: "test", concurrency: 4 };
  const jobs = createJobQueue({
    sql: ctx.sql,
    logger: createLogger("silent"),
    workerId: `test-${name}`,
    clock,
    pollMs: 1000,
    leaseSeconds,
    queues: { [name]: spec },
  });
  const ran: string[] = [];
  let markers = 0;
  /** Waits for `check`; a poll that fails (a busy shared database) is retried in real time by the queue. */
  const until = (check: () => boolean, what: string) => eventually(check, 15_000, what);
  /** Enqueues a job due now and waits for it: every job due by the clock's time is claimed by then. */
  const claimPass = async () => {
    const tag = `marker-${++markers}`;
    await jobs.enqueue(name, { tag });
    await until(() => ran.includes(tag), tag);
  };
  return { clock, name, jobs, ran, claimPass, until };
}

const started: JobQueue[] = [];
afterAll(async () => {
  await Promise.all(started.map((q) => q.stop()));
});

describe("the job queue on the fake clock", () => {
  test("a delayed job is due when the clock reaches its delay, not before, with no real wait", async () => {
    const q = clockedQueue();
    q.jobs.register<{ tag: string }>(q.name, async (job: Job<{ tag: string }>) => void q.ran.push(job.payload.tag));
    q.jobs.start();
    started.push(q.jobs);
    await q.jobs.enqueue(q.name, { tag: "in a minute" }, { delayMs: 60 * S });
    await q.claimPass();
    q.clock.advance(59 * S + 999);
    await q.claimPass();
    expect(q.ran).not.toContain("in a minute");
    q.clock.advance(1);
    await q.claimPass();
    await q.until(() => q.ran.includes("in a minute"), "the delayed job");
  });

  test("a retry waits the handler's RetryAfter on the clock", async () => {
    const q = clockedQueue();
    let calls = 0;
    q.jobs.register<{ tag: string }>(q.name, async (job) => {
      if (job.payload.tag !== "flaky") return void q.ran.push(job.payload.tag);
      calls++;
      if (calls === 1) throw new RetryAfter(30 * S, "not yet");
      q.ran.push("flaky");
    });
    q.jobs.start();
    started.push(q.jobs);
    await q.jobs.enqueue(q.name, { tag: "flaky" });
    await q.until(() => calls === 1, "the first attempt");
    await eventually(async () => {
      const [row] = await ctx.sql<{ locked_by: string | null }[]>`select locked_by from jobs where queue = ${q.name} and payload->>'tag' = 'flaky'`;
      return row && row.locked_by === null;
    });
    q.clock.advance(29 * S);
    await q.claimPass();
    expect(calls).toBe(1);
    q.clock.advance(1 * S);
    await q.claimPass();
    await q.until(() => q.ran.includes("flaky"), "the retry");
    expect(calls).toBe(2);
  });
});

describe("the job queue's leases run on real time", () => {
  test("a due job under the lease of a worker that died is claimed once the lease lapses, with the clock standing still", async () => {
    const q = clockedQueue(3);
    q.jobs.register<{ tag: string }>(q.name, async (job) => void q.ran.push(job.payload.tag));
    q.jobs.start();
    started.push(q.jobs);
    await ctx.sql`
      insert into jobs (queue, payload, max_attempts, attempts, locked_by, locked_until, run_at)
      values (${q.name}, ${ctx.sql.json({ tag: "orphan" })}, 5, 1, 'a-worker-that-died', now() + interval '1 second', now() - interval '1 second')`;
    // No wake, no clock move: only the queue's real-time watch can find the lapsed lease.
    await eventually(() => q.ran.includes("orphan"), 15_000, "the orphaned job");
    expect(q.clock.now()).toBeLessThanOrEqual(Date.now());
  });
});

describe("number locks on the fake clock", () => {
  const clock = createFakeClock(Date.now());
  let c: Awaited<ReturnType<typeof clockedContext>>;
  const events: Delivery[] = [];
  beforeAll(async () => {
    c = await clockedContext(ctx, clock);
    c.services.realtime.watch((m) => events.push(m));
    c.services.jobs.start();
  }, 60_000);
  afterAll(() => c.close());

  test("a lock ends at its time: the expiry job is due by the clock, clears the lock and announces it", async () => {
    const a = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id]);
    const res = await c.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { duration_seconds: 60 } });
    expect(res.status).toBe(200);
    expect(Date.parse(res.body.data.lock.locked_until)).toBe(clock.now() + 60 * S);
    const unlocked = () => events.filter((e) => e.event === "number.unlocked" && e.channel === `private-number.${sim.id}`);

    clock.advance(59 * S);
    // The expiry job is not due yet: it is still waiting, never attempted.
    const [job] = await ctx.sql<
      { attempts: number }[]
    >`select attempts from jobs where queue = 'number.lock-expiry' and (payload->>'hosted_sim_id')::bigint = ${sim.id}`;
    expect(job?.attempts).toBe(0);
    expect((await c.request("GET", `/api/numbers/${sim.id}`, { token: a.token })).body.data.locked).toBe(true);

    clock.advance(1 * S);
    // The poll timer is the clock's too; a wake-up makes the claim happen now rather than at the next poll.
    c.services.jobs.wake();
    await eventually(() => unlocked().length === 1, 5000, "number.unlocked");
    expect((unlocked()[0]!.data as { reason: string }).reason).toBe("expired");
    expect((await lockHistory(ctx.sql, sim.id)).map((h) => h.release_reason)).toEqual(["expired"]);
    expect((await c.request("GET", `/api/numbers/${sim.id}`, { token: a.token })).body.data).toMatchObject({ locked: false, lock: null });
  });
});
