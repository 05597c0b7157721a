import { beforeAll, describe, expect, test } from "bun:test";
import type { Rule } from "../../server/auth/caller";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";
import { loadOperations } from "../openapi-operations";

/**
 * Authorization comes before validation (API.md §2): a caller a route refuses gets 401/403
 * whatever it sent, and never learns the route's input rules from a 422. Every operation of the
 * OpenAPI document that declares its rule (`x-simhost-auth`) is tried with input that breaks
 * every rule at once: a non-numeric id in the path, an out-of-range query and a body of the
 * wrong type.
 */
type Operation = { method: string; path: string; rule: Rule };

let ctx: TestContext;
let operations: Operation[];
let memberToken: string;
let bareKey: string;
beforeAll(async () => {
  ctx = await sharedTestContext();
  operations = (await loadOperations(ctx)).flatMap((op) => {
    const rule = (op as { "x-simhost-auth"?: Rule })["x-simhost-auth"];
    return rule ? [{ method: op.method, path: op.path, rule }] : [];
  });
  const tenant = await createTenant(ctx.sql);
  const member = await createUser(ctx.sql, { orgId: tenant.org.id, role: "member" });
  memberToken = await sessionFor(ctx.sql, member.id);
  bareKey = (await createApiKey(ctx.sql, tenant.org.id, [])).key;
});

/** Input no route accepts; `body` is a JSON array (valid JSON of the wrong type) or unparseable text. */
function invalidRequest(op: Operation, token: string, body: unknown = [1]) {
  // A NUL in the query included: no route takes one, and it is refused after authorization like the rest.
  const path = `${op.path.replace(/\{[^}]+\}/g, "not-a-number")}?per_page=0&page=0&x=%00`;
  return ctx.request(op.method, path, { token, ...(op.method === "GET" || op.method === "DELETE" ? {} : { body }) });
}

describe("authorization before validation, on every operation", () => {
  test("the document declares a rule on every authenticated /api operation", () => {
    expect(operations.length).toBeGreaterThan(50);
  });

  test("no token: 401 on every operation, whatever the input", async () => {
    for (const op of operations) {
      const res = await invalidRequest(op, "");
      expect([op.method, op.path, res.status]).toEqual([op.method, op.path, 401]);
      expectErrorShape(res.body, "unauthenticated");
    }
  });

  test("an API key without the permission: 403 on every operation it may not use, never 422", async () => {
    const refused = operations.filter((op) => op.rule.apiKey !== "any");
    expect(refused.length).toBeGreaterThan(40);
    for (const op of refused) {
      for (const body of [[1], "{ not json"]) {
        const res = await invalidRequest(op, bareKey, body);
        expect([op.method, op.path, res.status]).toEqual([op.method, op.path, 403]);
        expectErrorShape(res.body, op.rule.apiKey === "session_only" ? "api_key_not_allowed" : "permission_denied");
      }
    }
  });

  test("a member: 403 on every operation that needs the admin role, never 422", async () => {
    const adminOnly = operations.filter((op) => op.rule.role === "admin");
    expect(adminOnly.length).toBeGreaterThan(18);
    for (const op of adminOnly) {
      const res = await invalidRequest(op, memberToken);
      expect([op.method, op.path, res.status]).toEqual([op.method, op.path, 403]);
      expectErrorShape(res.body, "permission_denied");
    }
  });

  test("an allowed caller still gets 422 (or 400 for an unparseable body) for the same input", async () => {
    const res = await ctx.request("POST", "/api/teams", { token: memberToken, body: { name: 42 } });
    expect(res.status).toBe(403);
    const owner = (await createTenant(ctx.sql)).token;
    const invalid = await ctx.request("POST", "/api/teams", { token: owner, body: { name: 42 } });
    expect(invalid.status).toBe(422);
    expectErrorShape(invalid.body, "validation_failed");
    const unparseable = await ctx.request("POST", "/api/teams", { token: owner, body: "{ not json" });
    expect(unparseable.status).toBe(400);
    expectErrorShape(unparseable.body, "malformed_body");
  });
});
