import { beforeAll, describe, expect, test } from "bun:test";
import { buildApp } from "../../server/app";
import { createDeprecations, type Deprecation } from "../../server/lib/deprecations";
import { createTenant } from "../fixtures";
import { createSharedNumber } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
let token: string;
const marked: Deprecation[] = [
  { method: "GET", route: "/api/me", deprecatedAt: "2026-06-01", changelog: "test-me" },
  { method: "GET", route: "/api/health", query: "verbose", deprecatedAt: "2026-06-01", changelog: "test-verbose" },
];
let app: ReturnType<typeof buildApp>;

beforeAll(async () => {
  ctx = await sharedTestContext();
  token = (await createTenant(ctx.sql)).token;
  app = buildApp(ctx.services, { deprecations: marked });
});

const get = (path: string) => app.handle(new Request(`http://localhost:3000${path}`, { headers: { authorization: `Bearer ${token}` } }));

describe("deprecation signalling", () => {
  test("a deprecated route answers with Deprecation and a Link to the changelog, and no Sunset of its own", async () => {
    const res = await get("/api/me");
    expect(res.status).toBe(200);
    expect(res.headers.get("deprecation")).toBe(`@${Date.parse("2026-06-01") / 1000}`);
    expect(res.headers.get("sunset")).toBeNull();
    expect(res.headers.get("link")).toBe('<http://localhost:3000/changelog#test-me>; rel="deprecation"; type="text/markdown"');
  });

  test("the same route under /api/v1 signals too", async () => {
    expect((await get("/api/v1/me")).headers.get("deprecation")).not.toBeNull();
  });

  test("a route that is not deprecated answers without them", async () => {
    const res = await get("/api/health");
    expect(res.headers.get("deprecation")).toBeNull();
    expect(res.headers.get("sunset")).toBeNull();
  });

  test("a deprecated query parameter signals only when it is used", async () => {
    expect((await get("/api/health?verbose=1")).headers.get("deprecation")).toBe(`@${Date.parse("2026-06-01") / 1000}`);
  });

  test("the OpenAPI document marks deprecated operations and parameters", async () => {
    const doc = (await (await get("/openapi.json")).json()) as any;
    expect(doc.paths["/api/me"].get.deprecated).toBe(true);
    expect(doc.paths["/api/health"].get.deprecated).toBeUndefined();
    const annotated = createDeprecations([{ method: "GET", route: "/x/:id", query: "q", deprecatedAt: "2026-01-01", changelog: "x" }], "http://h").annotate({
      paths: {
        "/x/{id}": {
          get: {
            parameters: [
              { name: "q", in: "query" },
              { name: "id", in: "path" },
            ],
          },
        },
      },
    });
    expect(annotated.paths?.["/x/{id}"]?.get?.parameters).toEqual([
      { name: "q", in: "query", deprecated: true },
      { name: "id", in: "path" },
    ]);
  });
});

describe("a Sunset date belongs to a whole version (SPEC.md 9.3)", () => {
  test("every response of a version with an end date carries it; its successor's do not", async () => {
    const sunsetting = buildApp(ctx.services, { deprecations: [], versionSunsets: { 1: "2028-06-01" } });
    const at = (path: string) => sunsetting.handle(new Request(`http://localhost:3000${path}`, { headers: { authorization: `Bearer ${token}` } }));
    for (const path of ["/api/me", "/api/v1/me", "/api/v1/teams"]) {
      const res = await at(path);
      expect({ path, sunset: res.headers.get("sunset"), link: res.headers.get("link") }).toEqual({
        path,
        sunset: "Thu, 01 Jun 2028 00:00:00 GMT",
        link: '<http://localhost:3000/changelog#sunset-v1>; rel="sunset"; type="text/markdown"',
      });
    }
    for (const path of ["/api/v2/me", "/api/v2/teams"]) expect((await at(path)).headers.get("sunset")).toBeNull();
  });

  test("no version has an end date yet", async () => {
    expect((await ctx.request("GET", "/api/me", { token })).headers.get("sunset")).toBeNull();
  });
});

describe("messages ?limit= (deprecated in v1, removed in v2)", () => {
  let hostedSim: number;
  beforeAll(async () => {
    const tenant = await createTenant(ctx.sql);
    token = tenant.token;
    hostedSim = (await createSharedNumber(ctx.sql, [tenant.org.id])).id;
  });

  test("v1 (unprefixed and /api/v1) keeps answering limit, with Deprecation and no Sunset", async () => {
    for (const prefix of ["/api", "/api/v1"]) {
      const res = await ctx.request("GET", `${prefix}/messages?hosted_sim=${hostedSim}&limit=5`, { token });
      expect({ prefix, status: res.status, perPage: res.body.meta?.per_page }).toEqual({ prefix, status: 200, perPage: 5 });
      expect(res.headers.get("deprecation")).toBe(`@${Date.parse("2026-11-21") / 1000}`);
      expect(res.headers.get("sunset")).toBeNull();
    }
  });

  test("v2 refuses limit with 422 naming the field; per_page works", async () => {
    const res = await ctx.request("GET", `/api/v2/messages?hosted_sim=${hostedSim}&limit=5`, { token });
    expect(res.status).toBe(422);
    expectErrorShape(res.body, "validation_failed");
    expect(res.body.errors.limit[0]).toContain("per_page");
    const ok = await ctx.request("GET", `/api/v2/messages?hosted_sim=${hostedSim}&per_page=5`, { token });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("deprecation")).toBeNull();
  });

  test("authorization still comes first in v2: without a token, 401", async () => {
    expect((await ctx.request("GET", `/api/v2/messages?hosted_sim=${hostedSim}&limit=5`)).status).toBe(401);
  });
});
