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

  test("a job running (held by a worker) is not waiting: a long one leaves the queue check ok", async () => {
    const [job] = await ctx.sql<{ id: number }[]>`
      insert into jobs (queue, payload, run_at, attempts, locked_by, locked_until)
      values ('nobody-works-this', '{}', now() - interval '6 minutes', 1, 'another-instance', now() + interval '1 minute') returning id`;
    try {
      const res = await ctx.request("GET", "/api/health");
      expect(res.status).toBe(200);
      expect(res.body.checks.queue.status).toBe("ok");
    } finally {
      await ctx.sql`delete from jobs where id = ${job!.id}`;
    }
  });

  test("unknown route answers 404 in the error shape", async () => {
    const res = await ctx.request("GET", "/api/does-not-exist");
    expect(res.status).toBe(404);
    expectErrorShape(res.body, "not_found");
  });

  test("a routed path under a method it does not take answers 405 with Allow naming the ones it takes", async () => {
    for (const [method, path, allow] of [
      ["DELETE", "/api/me", "GET, HEAD, OPTIONS"],
      ["DELETE", "/api/v1/me", "GET, HEAD, OPTIONS"],
      ["PUT", "/api/numbers/123", "GET, HEAD, OPTIONS"],
      ["PATCH", "/api/teams", "GET, HEAD, OPTIONS, POST"],
    ] as const) {
      const res = await ctx.request(method, path, { body: method === "DELETE" ? undefined : {} });
      expect([method, path, res.status, res.headers.get("allow")]).toEqual([method, path, 405, allow]);
      expectErrorShape(res.body, "method_not_allowed");
    }
    // A path no route takes is still 404, whatever the method.
    expect((await ctx.request("DELETE", "/api/does-not-exist")).status).toBe(404);
  });

  test("OPTIONS on a routed path answers 204 with Allow, before authentication and without CORS; on a path no route takes, 404", async () => {
    for (const [path, allow] of [
      ["/api/me", "GET, HEAD, OPTIONS"],
      ["/api/v1/teams", "GET, HEAD, OPTIONS, POST"],
      ["/api/byos/devices/7/heartbeat", "OPTIONS, POST"],
    ] as const) {
      const res = await ctx.request("OPTIONS", path, { headers: { origin: "https://elsewhere.example", "access-control-request-method": "POST" } });
      expect([path, res.status, res.headers.get("allow"), res.text]).toEqual([path, 204, allow, ""]);
      expect(res.headers.get("x-request-id")).toBeTruthy();
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
    // The broadcasting routes keep their own CORS preflight answer.
    const preflight = await ctx.request("OPTIONS", "/api/broadcasting/auth");
    expect([preflight.status, preflight.headers.get("access-control-allow-origin")]).toEqual([204, "*"]);
    const missing = await ctx.request("OPTIONS", "/api/does-not-exist");
    expect(missing.status).toBe(404);
    expectErrorShape(missing.body, "not_found");
  });

  test("without METRICS_TOKEN there is no /metrics (test/integration/metrics-access.test.ts has the rest)", async () => {
    // Every method: an OPTIONS answering 204 with `Allow`, or a POST 405, would say it is there.
    for (const method of ["GET", "HEAD", "OPTIONS", "POST"]) {
      const res = await ctx.request(method, "/metrics");
      expect([method, res.status, res.headers.get("allow")]).toEqual([method, 404, null]);
      if (method !== "HEAD") expectErrorShape(res.body, "not_found");
    }
  });
});
