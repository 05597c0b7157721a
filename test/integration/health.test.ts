import { beforeAll, describe, expect, test } from "bun:test";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

describe("health and errors", () => {
  test("health reports database, cache and queue", async () => {
    const res = await ctx.request("GET", "/api/health");
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("ok");
    expect(Object.keys(res.body.checks).sort()).toEqual(["cache", "database", "queue"]);
    expect(res.body.checks.database.status).toBe("ok");
  });

  test("unknown route answers 404 in the error shape", async () => {
    const res = await ctx.request("GET", "/api/does-not-exist");
    expect(res.status).toBe(404);
    expectErrorShape(res.body, "not_found");
  });

  test("metrics are Prometheus text", async () => {
    await ctx.request("GET", "/api/health");
    const res = await ctx.request("GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.text).toContain("simhost_http_request_duration_seconds");
    expect(res.text).toContain("simhost_queue_backlog");
  });
});
