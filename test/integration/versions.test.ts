import { beforeAll, describe, expect, test } from "bun:test";
import { createTenant } from "../fixtures";
import { randomAndroidId, registerDevice } from "../fixtures-devices";
import { createSharedNumber, receiveSms } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
let token: string;
beforeAll(async () => {
  ctx = await sharedTestContext();
  token = (await createTenant(ctx.sql)).token;
});

/** Volatile values (ids of requests, times, measured durations) differ between two calls; links differ by the prefix only. */
const stable = (body: unknown): unknown =>
  JSON.parse(JSON.stringify(body), (key, value) =>
    /(_at|timestamp|time|message)$/.test(key) || key === "server_time" ? "<volatile>" : typeof value === "string" ? value.replace("/api/v1/", "/api/") : value,
  );

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

  test("every operation of the document answers the same without a token, with a bad token and with a bad body", async () => {
    const doc = (await ctx.request("GET", "/openapi.json")).body;
    let compared = 0;
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      if (!path.startsWith("/api/")) continue;
      const concrete = path.replace(/\{[^}]+\}/g, "999999999");
      for (const method of Object.keys(item).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))) {
        for (const opts of [{}, { token: "st_not-a-token" }, { token: "st_not-a-token", body: "{not json" }]) {
          const a = await ctx.request(method.toUpperCase(), concrete, opts);
          const b = await ctx.request(method.toUpperCase(), concrete.replace(/^\/api\//, "/api/v1/"), opts);
          expect({ route: `${method} ${path}`, status: b.status, body: stable(b.body) }).toEqual({
            route: `${method} ${path}`,
            status: a.status,
            body: stable(a.body),
          });
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(100);
  });

  test("errors and unknown routes behave the same", async () => {
    const a = await ctx.request("GET", "/api/me");
    const b = await ctx.request("GET", "/api/v1/me");
    expect(b.status).toBe(401);
    expect(b.body).toEqual(a.body);
    expect((await ctx.request("GET", "/api/v1/nope", { token })).status).toBe(404);
    expect((await ctx.request("GET", "/api/v9/me", { token })).status).toBe(404);
  });

  test("one version prefix is taken off, once: /api/v1/v1/... and /api/v2/v1/... are no routes", async () => {
    for (const path of ["/api/v1/v1/me", "/api/v2/v1/me", "/api/v1/v2/me", `/api${"/v1".repeat(3000)}/me`]) {
      const res = await ctx.request("GET", path, { token });
      expect([path.slice(0, 20), res.status]).toEqual([path.slice(0, 20), 404]);
      expectErrorShape(res.body, "not_found");
    }
  });
});

describe("/api/v2 holds only what changed", () => {
  test("GET /api/v2/me lists every organization with its role instead of one organization", async () => {
    const a = await createTenant(ctx.sql);
    const other = await createTenant(ctx.sql);
    await ctx.sql`insert into memberships (user_id, organization_id, role) values (${a.user.id}, ${other.org.id}, 'member')`;
    const v1 = await ctx.request("GET", "/api/v1/me", { token: a.token });
    const v2 = await ctx.request("GET", "/api/v2/me", { token: a.token });
    expect(v2.status).toBe(200);
    expect(v2.body.organization).toBeUndefined();
    expect(v2.body.current_organization_id).toBe(v1.body.organization.id);
    expect(v2.body.organizations).toEqual([
      { id: a.org.id, name: a.org.name, role: "owner" },
      { id: other.org.id, name: other.org.name, role: "member" },
    ]);
    expect(v2.body.user).toEqual(v1.body.user);
  });

  test("routes v2 does not change answer as in v1", async () => {
    const v1 = await ctx.request("GET", "/api/v1/teams", { token });
    const v2 = await ctx.request("GET", "/api/v2/teams", { token });
    expect(v2.status).toBe(v1.status);
    expect(v2.body).toEqual(v1.body);
  });

  test("register answers its fields at the top level: v1 repeats them under data (deprecated in the document), v2 does not", async () => {
    const register = (path: string) =>
      ctx.request("POST", path, {
        token,
        body: { android_id: randomAndroidId(), sim_slots: [1], device_model: "Pixel 8", app_version: "1.4.2" },
      });
    const v1 = await register("/api/byos/devices/register");
    expect(v1.status).toBe(201);
    const { data, ...top } = v1.body;
    expect(data).toEqual(top);
    expect(top.sim_cards[0].verification_code).toMatch(/^SIM-/);
    const v2 = await register("/api/v2/byos/devices/register");
    expect(v2.status).toBe(201);
    expect(v2.body.data).toBeUndefined();
    expect(Object.keys(v2.body).sort()).toEqual(Object.keys(top).sort());
    expect(v2.body.status).toBe("pending_verification");
    const doc = (await ctx.request("GET", "/openapi.json")).body;
    const schema = doc.paths["/api/byos/devices/register"].post.responses["201"].content["application/json"].schema;
    expect(schema.properties.data.deprecated).toBe(true);
    expect(schema.properties.id).toBeDefined();
  });

  test("the v1 OpenAPI document does not expose v2", async () => {
    const doc = (await ctx.request("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/api/v2"))).toEqual([]);
    expect(doc.paths["/api/me"].get).toBeDefined();
  });
});

describe("pagination links keep the version prefix the request came in on", () => {
  const pathsOf = (links: Record<string, string | null>) => Object.values(links).flatMap((l) => (l === null ? [] : [new URL(l).pathname]));

  test("messages: /api/v2 and /api/v1 pages link under their own prefix", async () => {
    const tenant = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [tenant.org.id]);
    for (let i = 0; i < 3; i++) await receiveSms(ctx.sql, sim.id);
    for (const prefix of ["/api/v2", "/api/v1", "/api"]) {
      const res = await ctx.request("GET", `${prefix}/messages?hosted_sim=${sim.id}&per_page=1&page=2`, { token: tenant.token });
      expect(res.status).toBe(200);
      expect({ prefix, paths: pathsOf(res.body.links) }).toEqual({ prefix, paths: Array(4).fill(`${prefix}/messages`) });
      expect(new URL(res.body.meta.path).pathname).toBe(`${prefix}/messages`);
      expect(new URL(res.body.links.next).searchParams.get("hosted_sim")).toBe(String(sim.id));
      expect(new URL(res.body.links.next).searchParams.get("page")).toBe("3");
    }
  });

  test("devices: /api/v2 and /api/v1 pages link under their own prefix", async () => {
    const tenant = await createTenant(ctx.sql, { plan: "pro" });
    for (let i = 0; i < 3; i++) await registerDevice(ctx, tenant.token);
    for (const prefix of ["/api/v2", "/api/v1", "/api"]) {
      const res = await ctx.request("GET", `${prefix}/byos/devices?per_page=1&page=2`, { token: tenant.token });
      expect(res.status).toBe(200);
      expect({ prefix, paths: pathsOf(res.body.links) }).toEqual({ prefix, paths: Array(4).fill(`${prefix}/byos/devices`) });
      expect(new URL(res.body.meta.path).pathname).toBe(`${prefix}/byos/devices`);
    }
  });
});
