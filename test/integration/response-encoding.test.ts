import { beforeAll, expect, test } from "bun:test";
import { Kind, TransformKind } from "@sinclair/typebox";
import { t } from "elysia";
import { sharedTestContext, type TestContext } from "../helpers";

/**
 * No answer is encoded through TypeBox's interpreter. A response schema holding a transform
 * (Elysia's `t.Integer()`, `t.Numeric()`, `t.Date()`, an `IntegerParam`) makes Elysia run
 * `Value.Encode` over every answer of the route, a walk of the whole body that cost GET /api/me
 * a quarter of its server CPU (docs/benchmarks.md, "Responses encoded by TypeBox's interpreter")
 * and grows with every item of a list. Response fields use TypeBox's own types
 * (`Type.Integer()`), whose check is compiled.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

/** The path of the first transform under `schema`, or null. */
function transformIn(schema: unknown, path: string, seen = new Set<unknown>()): string | null {
  if (typeof schema !== "object" || schema === null || seen.has(schema)) return null;
  seen.add(schema);
  if (TransformKind in schema) return `${path || "(the body)"} (${String((schema as Record<symbol, unknown>)[Kind])})`;
  for (const [key, child] of Object.entries(schema)) {
    const found = transformIn(child, `${path}.${key}`, seen);
    if (found) return found;
  }
  return null;
}

test("no route's response schema holds a transform", () => {
  const routes = ctx.app.routes;
  expect(routes.length).toBeGreaterThan(100);
  const withResponse = routes.filter((r) => r.hooks?.response);
  expect(withResponse.length).toBeGreaterThan(80);
  const found = withResponse.flatMap((r) => {
    const at = transformIn(r.hooks.response, "");
    return at ? [`${r.method} ${r.path}: ${at}`] : [];
  });
  expect(found).toEqual([]);
});

test("the guard sees a transform where one is", () => {
  expect(transformIn({ 200: t.Object({ data: t.Object({ id: t.Integer() }) }) }, "")).toBe(".200.properties.data.properties.id (Union)");
});
