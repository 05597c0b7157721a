import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

// Its own context with the job workers running, as in a real server: the queue check reports
// whether jobs are being worked off.
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.start();
});
afterAll(() => ctx.close());

describe("health and errors", () => {
  test("health reports database, cache and queue", async () => {
    const res = await ctx.request("GET", "/api/health");
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("ok");
    expect(Object.keys(res.body.checks).sort()).toEqual(["cache", "database", "queue"]);
    expect(res.body.checks.database.status).toBe("ok");
  });

  test("a job waiting far too long turns the queue check (and health) failing", async () => {
    const [job] = await ctx.sql<{ id: number }[]>`
      insert into jobs (queue, payload, run_at) values ('nobody-works-this', '{}', now() - interval '1 hour') returning id`;
    try {
      const res = await ctx.request("GET", "/api/health");
      expect(res.status).toBe(503);
      expect(res.body.status).toBe("degraded");
      expect(res.body.checks.queue.status).toBe("failing");
    } finally {
      await ctx.sql`delete from jobs where id = ${job!.id}`;
    }
    expect((await ctx.request("GET", "/api/health")).status).toBe(200);
  });

  test("unknown route answers 404 in the error shape", async () => {
    const res = await ctx.request("GET", "/api/does-not-exist");
    expect(res.status).toBe(404);
    expectErrorShape(res.body, "not_found");
  });

  test("without METRICS_TOKEN there is no /metrics (test/integration/metrics-access.test.ts has the rest)", async () => {
    const res = await ctx.request("GET", "/metrics");
    expect(res.status).toBe(404);
    expectErrorShape(res.body, "not_found");
  });
});
