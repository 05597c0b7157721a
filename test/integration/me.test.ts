import { beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, createTenant } from "../fixtures";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

describe("GET /api/me", () => {
  test("session token: user, auth_type session, organization", async () => {
    const { org, user, token } = await createTenant(ctx.sql);
    const res = await ctx.request("GET", "/api/me", { token });
    expect(res.status).toBe(200);
    expect(res.body.auth_type).toBe("session");
    expect(res.body.user.email).toBe(user.email);
    expect(res.body.organization.id).toBe(org.id);
    expect(res.body.api_key).toBeUndefined();
  });

  test("API key: auth_type api_key with its permissions", async () => {
    const { org } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["numbers.read"]);
    const res = await ctx.request("GET", "/api/me", { token: key.key });
    expect(res.status).toBe(200);
    expect(res.body.auth_type).toBe("api_key");
    expect(res.body.api_key).toEqual({ id: key.id, name: "test key", permissions: ["numbers.read"] });
  });

  test("no token, unknown token: 401 unauthenticated", async () => {
    expectErrorShape((await ctx.request("GET", "/api/me")).body, "unauthenticated");
    const res = await ctx.request("GET", "/api/me", { token: "st_nope" });
    expect(res.status).toBe(401);
    expectErrorShape(res.body, "unauthenticated");
  });

  test("X-Organization-Id of an organization the user is not in: 404", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const res = await ctx.request("GET", "/api/me", { token: a.token, headers: { "x-organization-id": String(b.org.id) } });
    expect(res.status).toBe(404);
    expectErrorShape(res.body, "not_found");
  });
});
