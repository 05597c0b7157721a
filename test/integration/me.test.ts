import { beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, createTenant, createUser } from "../fixtures";
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

describe("GET /api/me with an API key answers a user (SPEC.md 4.2: user has the 2.2 shape)", () => {
  const keyMadeBy = async (orgId: number, createdBy: number | null) => {
    const key = await createApiKey(ctx.sql, orgId, []);
    await ctx.sql`update api_keys set created_by = ${createdBy} where id = ${key.id}`;
    return key.key;
  };
  const userOf = async (key: string, path = "/api/me") => {
    const res = await ctx.request("GET", path, { token: key });
    expect(res.status).toBe(200);
    return res.body.user;
  };

  test("the key's creator, in v1 and v2", async () => {
    const { org } = await createTenant(ctx.sql);
    const admin = await createUser(ctx.sql, { orgId: org.id, role: "admin" });
    const key = await keyMadeBy(org.id, admin.id);
    const user = await userOf(key);
    expect(user).toMatchObject({ id: admin.id, email: admin.email, name: admin.name });
    expect(Object.keys(user).sort()).toEqual(["created_at", "email", "email_verified_at", "id", "name", "two_factor_enabled", "updated_at"]);
    expect((await userOf(key, "/api/v2/me")).id).toBe(admin.id);
  });

  test("no creator recorded: the organization's first owner", async () => {
    const { org, user: owner } = await createTenant(ctx.sql);
    await createUser(ctx.sql, { orgId: org.id, role: "owner" });
    expect((await userOf(await keyMadeBy(org.id, null))).id).toBe(owner.id);
  });

  test("creator no longer a member, or deleted: the first owner; never a user outside the organization", async () => {
    const { org, user: owner } = await createTenant(ctx.sql);
    const left = await createUser(ctx.sql, { orgId: org.id, role: "admin" });
    const gone = await createUser(ctx.sql, { orgId: org.id, role: "admin" });
    const leftKey = await keyMadeBy(org.id, left.id);
    const goneKey = await keyMadeBy(org.id, gone.id);
    await ctx.sql`delete from memberships where user_id = ${left.id}`;
    await ctx.sql`delete from users where id = ${gone.id}`;
    expect((await userOf(leftKey)).id).toBe(owner.id);
    expect((await userOf(goneKey)).id).toBe(owner.id);
  });

  test("an organization without an owner: user null", async () => {
    const { org, user: owner } = await createTenant(ctx.sql);
    const key = await keyMadeBy(org.id, null);
    await ctx.sql`delete from memberships where user_id = ${owner.id}`;
    expect(await userOf(key)).toBeNull();
  });
});
