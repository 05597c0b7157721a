import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { buildApp } from "../../server/app";
import { createTenant } from "../fixtures";
import { createSharedNumber } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";

/**
 * Long-polls over a real socket under the version prefixes: the route keeps the connection open
 * past the server's idle timeout (here 2 s) on the request the client sent, which Bun knows;
 * on the re-handled copy it did nothing, and the client saw its connection reset at the idle timeout.
 */
let ctx: TestContext;
let server: ReturnType<ReturnType<typeof buildApp>["listen"]>;
let url: string;
beforeAll(async () => {
  ctx = await createTestContext();
  server = buildApp(ctx.services).listen({ port: 0, hostname: "127.0.0.1", idleTimeout: 2 });
  url = `http://127.0.0.1:${server.server!.port}`;
}, 60_000);
afterAll(async () => {
  await server?.stop(true);
  await ctx?.close();
});

describe("long-polls past the idle timeout, with and without a version prefix", () => {
  test("events?wait= and messages/next answer at the end of their wait (4 s), not reset at the idle timeout (2 s)", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const paths = [
      "/api/v1/events?after=now&wait=4",
      "/api/v2/events?after=now&wait=4",
      `/api/v1/numbers/${sim.id}/messages/next?timeout=4`,
      `/api/numbers/${sim.id}/messages/next?timeout=4`,
    ];
    const answers = await Promise.all(
      paths.map(async (path) => {
        const started = performance.now();
        try {
          const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${t.token}` } });
          return { path, status: res.status, seconds: Math.round((performance.now() - started) / 1000) };
        } catch (e) {
          return { path, status: `failed: ${(e as Error).message}`, seconds: Math.round((performance.now() - started) / 1000) };
        }
      }),
    );
    expect(answers).toEqual(paths.map((path) => ({ path, status: 200, seconds: 4 })));
  }, 30_000);
});
