import { beforeAll, describe, expect, test } from "bun:test";
import { buildApp } from "../../server/app";
import { createDeprecations, type Deprecation } from "../../server/lib/deprecations";
import { createTenant } from "../fixtures";
import { sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
let token: string;
const marked: Deprecation[] = [
  { method: "GET", route: "/api/me", deprecatedAt: "2026-06-01", sunsetAt: "2027-06-01", changelog: "test-me" },
  { method: "GET", route: "/api/health", query: "verbose", deprecatedAt: "2026-06-01", sunsetAt: "2027-06-01", changelog: "test-verbose" },
];
let app: ReturnType<typeof buildApp>;

beforeAll(async () => {
  ctx = await sharedTestContext();
  token = (await createTenant(ctx.sql)).token;
  app = buildApp(ctx.services, { deprecations: marked });
});

const get = (path: string) => app.handle(new Request(`http://localhost:3000${path}`, { headers: { authorization: `Bearer ${token}` } }));

describe("deprecation signalling", () => {
  test("a deprecated route answers with Deprecation, Sunset and a Link to the changelog", async () => {
    const res = await get("/api/me");
    expect(res.status).toBe(200);
    expect(res.headers.get("deprecation")).toBe(`@${Date.parse("2026-06-01") / 1000}`);
    expect(res.headers.get("sunset")).toBe("Tue, 01 Jun 2027 00:00:00 GMT");
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
    expect((await get("/api/health?verbose=1")).headers.get("sunset")).toBe("Tue, 01 Jun 2027 00:00:00 GMT");
  });

  test("the OpenAPI document marks deprecated operations and parameters", async () => {
    const doc = (await (await get("/openapi.json")).json()) as any;
    expect(doc.paths["/api/me"].get.deprecated).toBe(true);
    expect(doc.paths["/api/health"].get.deprecated).toBeUndefined();
    const annotated = createDeprecations(
      [{ method: "GET", route: "/x/:id", query: "q", deprecatedAt: "2026-01-01", sunsetAt: "2027-01-01", changelog: "x" }],
      "http://h",
    ).annotate({
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
