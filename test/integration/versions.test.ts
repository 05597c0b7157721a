import { beforeAll, describe, expect, test } from "bun:test";
import { createTenant } from "../fixtures";
import { sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
let token: string;
beforeAll(async () => {
  ctx = await sharedTestContext();
  token = (await createTenant(ctx.sql)).token;
});

/** Volatile values (ids of requests, times, measured durations) differ between two calls. */
const stable = (body: unknown): unknown =>
  JSON.parse(JSON.stringify(body), (key, value) => (/(_at|timestamp|time|message)$/.test(key) || key === "server_time" ? "<volatile>" : value));

describe("/api/v1 is the current API under its version prefix", () => {
  test("every GET route without path parameters answers the same under /api and /api/v1", async () => {
    const doc = (await ctx.request("GET", "/openapi.json")).body;
    const paths = Object.keys(doc.paths).filter((p) => p.startsWith("/api/") && !p.includes("{") && doc.paths[p].get);
    expect(paths.length).toBeGreaterThan(1);
    for (const path of paths) {
      const a = await ctx.request("GET", path, { token });
      const b = await ctx.request("GET", path.replace(/^\/api\//, "/api/v1/"), { token });
      expect({ path, status: b.status }).toEqual({ path, status: a.status });
      if (!(a.headers.get("content-type") ?? "").includes("json")) continue;
      expect(stable(b.body)).toEqual(stable(a.body));
    }
  });

  test("errors and unknown routes behave the same", async () => {
    const a = await ctx.request("GET", "/api/me");
    const b = await ctx.request("GET", "/api/v1/me");
    expect(b.status).toBe(401);
    expect(b.body).toEqual(a.body);
    expect((await ctx.request("GET", "/api/v1/nope", { token })).status).toBe(404);
    expect((await ctx.request("GET", "/api/v9/me", { token })).status).toBe(404);
  });
});
