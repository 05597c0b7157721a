import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Glob } from "bun";
import { createJobQueue, enqueueJobs } from "../../server/jobs/queue";
import { QUEUES, type QueueName, queueTable } from "../../server/jobs/registry";
import { createLogger } from "../../server/lib/logger";
import { sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

const names = Object.keys(QUEUES).sort();

describe("the job queue registry (server/jobs/registry.ts)", () => {
  test("the services register a handler for every queue of the registry, and for nothing else", () => {
    expect(ctx.services.jobs.registered().sort()).toEqual(names);
  });

  test("a queue that is not in the registry is refused: enqueue, the statement fragment, register", async () => {
    const jobs = createJobQueue({ sql: ctx.sql, logger: createLogger("silent"), workerId: "registry-test" });
    const stray = "nobody.listed" as QueueName;
    await expect(jobs.enqueue(stray, {})).rejects.toThrow(/not in the registry/);
    expect(() => enqueueJobs(ctx.sql, stray, ctx.sql`select '{}'::jsonb`)).toThrow(/not in the registry/);
    expect(() => jobs.register(stray, async () => {})).toThrow(/not in the registry/);
    expect((await ctx.sql`select 1 from jobs where queue = ${stray}`).length).toBe(0);
  });

  test("a queue is registered as the registry describes it: batches only where it gives a batch size", () => {
    const jobs = createJobQueue({ sql: ctx.sql, logger: createLogger("silent"), workerId: "registry-test" });
    expect(() => jobs.register("device_sms.process", async () => {})).toThrow(/batchSize/);
    expect(() => jobs.registerBatch("number.lock-expiry", async () => {})).toThrow(/batchSize/);
  });

  test("every producer and handler the registry names exists and names the queue; no server file outside the job module writes the jobs table", () => {
    for (const [name, spec] of Object.entries(QUEUES)) {
      for (const file of [...spec.producers, spec.handler]) expect(readFileSync(file, "utf8").length).toBeGreaterThan(0);
      const legacy = "legacy" in spec && spec.legacy;
      // A queue nobody enqueues any more says so; every other one has a producer naming it.
      expect(spec.producers.length === 0).toBe(legacy);
      if (!legacy) expect(spec.producers.some((file) => readFileSync(file, "utf8").includes(`"${name}"`))).toBe(true);
    }
    const writers = [...new Glob("server/**/*.ts").scanSync(".")].filter((f) =>
      /\b(insert\s+into|update|delete\s+from)\s+jobs\b/i.test(readFileSync(f, "utf8")),
    );
    // The queue, and the operator's view of its dead jobs (retry, discard): both the job module's.
    expect(writers.sort()).toEqual(["server/jobs/dead-jobs.ts", "server/jobs/queue.ts"]);
  });

  test("docs/architecture.md lists the registry's queues (section Job queues)", () => {
    expect(readFileSync("docs/architecture.md", "utf8")).toContain(queueTable());
  });
});
