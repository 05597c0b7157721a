import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { buildApp } from "../../server/app";
import { createTenant } from "../fixtures";
import { createSharedNumber, createTeam } from "../fixtures-numbers";
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

describe("a webhook test to a target slower than the idle timeout", () => {
  test("answers the test's outcome when the target answers (3 s), not a reset at the idle timeout (2 s), on both test routes", async () => {
    const target = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => Bun.sleep(3000).then(() => new Response("ok")) });
    try {
      const t = await createTenant(ctx.sql);
      const team = await createTeam(ctx.sql, t.org.id);
      const post = (path: string, body?: unknown) =>
        fetch(`${url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const created = await post("/api/webhook-integrations", { name: "slow", url: `http://127.0.0.1:${target.port}/hook`, timeout_seconds: 10 });
      expect(created.status).toBe(201);
      const id = ((await created.json()) as { data: { id: number } }).data.id;
      expect((await post(`/api/webhook-integrations/${id}/mappings`, { team_id: team.id, forwarding_mode: "always" })).status).toBe(201);
      for (const path of [`/api/webhook-integrations/${id}/test`, `/api/teams/${team.id}/webhooks/${id}/test`]) {
        const res = await post(path).catch((e: Error) => ({ status: `failed: ${e.message}` }) as const);
        expect({ path, status: res.status }).toEqual({ path, status: 200 });
        expect(await (res as Response).json()).toMatchObject({ success: true, http_status: 200 });
      }
    } finally {
      target.stop(true);
    }
  }, 30_000);
});
