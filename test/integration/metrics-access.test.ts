import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { HEAP_SPACE_METRICS } from "../../server/lib/metrics";
import { createTenant } from "../fixtures";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/** GET /metrics answers only the operator's scraper, holding METRICS_TOKEN. */
const TOKEN = "metrics-token-0123456789";
let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext({ METRICS_TOKEN: TOKEN });
});
afterAll(() => ctx.close());

describe("/metrics with METRICS_TOKEN set", () => {
  test("the token gets Prometheus text", async () => {
    await ctx.request("GET", "/api/health");
    const res = await ctx.request("GET", "/metrics", { token: TOKEN });
    expect(res.status).toBe(200);
    expect(res.text).toContain("simhost_http_request_duration_seconds");
    for (const name of ["simhost_queue_backlog", "simhost_queue_oldest_seconds", "simhost_queue_dead"])
      expect(res.text).toMatch(new RegExp(`^${name} \\d`, "m"));
  });

  test("a scrape does not take a census of the heap: the heap-space figures are left out, the heap totals stay", async () => {
    const { text } = await ctx.request("GET", "/metrics", { token: TOKEN });
    for (const name of HEAP_SPACE_METRICS) expect(text).not.toContain(name);
    expect(text).toContain("nodejs_heap_size_total_bytes");
    expect(text).toContain("process_resident_memory_bytes");
  });

  test("every request is counted in the duration histogram by method, route and status, in Prometheus' histogram form", async () => {
    const scrape = async () => (await ctx.request("GET", "/metrics", { token: TOKEN })).text;
    const line = (name: string, le = "") =>
      new RegExp(`^simhost_http_request_duration_seconds_${name}\\{${le}method="GET",route="/api/health",status="200"\\} ([0-9.e+-]+)$`, "m");
    const count = async () => Number((await scrape()).match(line("count"))?.[1] ?? 0);
    const before = await count();
    for (let i = 0; i < 3; i++) await ctx.request("GET", "/api/health");
    // Observed after each answer went out: poll until the three are in, or the deadline passes.
    const deadline = Date.now() + 5000;
    let counted = await count();
    while (counted < before + 3 && Date.now() < deadline) counted = await count();
    expect(counted).toBe(before + 3);
    const text = await scrape();
    expect(Number(text.match(line("bucket", 'le="\\+Inf",'))?.[1])).toBe(counted);
    expect(Number(text.match(line("bucket", 'le="2.5",'))?.[1])).toBeLessThanOrEqual(counted);
    expect(Number(text.match(line("sum"))?.[1])).toBeGreaterThan(0);
  });

  test("no token, a wrong token, or a user's session answer 401 in the error shape", async () => {
    const session = (await createTenant(ctx.sql)).token;
    for (const token of [undefined, "wrong-token-0123456789", `${TOKEN}x`, session]) {
      const res = await ctx.request("GET", "/metrics", { token });
      expect(res.status).toBe(401);
      expectErrorShape(res.body, "unauthenticated");
      expect(res.text).not.toContain("simhost_");
    }
  });

  test("the route is there for every method: OPTIONS answers its Allow, a POST 405", async () => {
    const options = await ctx.request("OPTIONS", "/metrics");
    expect([options.status, options.headers.get("allow")]).toEqual([204, "GET, HEAD, OPTIONS"]);
    const post = await ctx.request("POST", "/metrics");
    expect(post.status).toBe(405);
    expectErrorShape(post.body, "method_not_allowed");
  });

  test("a METRICS_TOKEN shorter than 16 characters is refused at start", async () => {
    const { loadConfig } = await import("../../server/config");
    expect(() => loadConfig({ METRICS_TOKEN: "short" })).toThrow(/METRICS_TOKEN/);
  });
});
