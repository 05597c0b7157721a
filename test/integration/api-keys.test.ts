import { beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
// Starting the embedded database can take a while on a busy machine.
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

const ALL = ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function createKey(token: string, body: unknown = { name: "CI server", permissions: ["messages.read", "numbers.read"] }) {
  const res = await ctx.request("POST", "/api/api-keys", { token, body });
  expect(res.status).toBe(201);
  return res.body as { api_key: any; plain_text_key: string };
}

describe("API keys: create, list, show, update, delete", () => {
  test("create answers the key once, stores only its hash, and the key authenticates", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const { api_key, plain_text_key } = await createKey(token);
    expect(plain_text_key).toMatch(/^sk_[0-9A-Za-z]{32,}$/);
    expect(api_key).toEqual({
      id: expect.any(Number),
      name: "CI server",
      key_prefix: plain_text_key.slice(0, 12),
      permissions: ["numbers.read", "messages.read"],
      last_used_at: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const [row] = await ctx.sql`select key_hash::text as h, organization_id from api_keys where id = ${api_key.id}`;
    expect(row!.organization_id).toBe(org.id);
    expect(row!.h).not.toContain(plain_text_key.slice(3));
    const me = await ctx.request("GET", "/api/me", { token: plain_text_key });
    expect(me.status).toBe(200);
    expect(me.body.api_key).toEqual({ id: api_key.id, name: "CI server", permissions: ["numbers.read", "messages.read"] });
    const shown = await ctx.request("GET", `/api/api-keys/${api_key.id}`, { token });
    expect(shown.body.data.last_used_at).toMatch(ISO);
    expect(shown.body.data.plain_text_key).toBeUndefined();
  });

  test("list: the organization's keys only, without secrets; members may list and show", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const k1 = await createKey(a.token, { name: "one", permissions: [] });
    const k2 = await createKey(a.token, { name: "two", permissions: ALL });
    await createKey(b.token);
    const member = await createUser(ctx.sql, { orgId: a.org.id, role: "member" });
    const res = await ctx.request("GET", "/api/api-keys", { token: await sessionFor(ctx.sql, member.id) });
    expect(res.status).toBe(200);
    expect(res.body.data.map((k: any) => k.id)).toEqual([k1.api_key.id, k2.api_key.id]);
    expect(res.body.data[1].permissions).toEqual(ALL);
    for (const k of res.body.data) expect(k.plain_text_key).toBeUndefined();
    const show = await ctx.request("GET", `/api/api-keys/${k2.api_key.id}`, { token: await sessionFor(ctx.sql, member.id) });
    expect(show.status).toBe(200);
    expect(show.body.data).toEqual(k2.api_key);
  });

  test("update: name and permissions, each optional; the key's new permissions apply at once", async () => {
    const { token } = await createTenant(ctx.sql);
    const { api_key, plain_text_key } = await createKey(token);
    const renamed = await ctx.request("PATCH", `/api/api-keys/${api_key.id}`, { token, body: { name: "renamed" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: api_key.id, name: "renamed", permissions: ["numbers.read", "messages.read"] });
    const perms = await ctx.request("PATCH", `/api/api-keys/${api_key.id}`, { token, body: { permissions: ["webhooks.receive"] } });
    expect(perms.body.data).toMatchObject({ name: "renamed", permissions: ["webhooks.receive"], key_prefix: api_key.key_prefix });
    const none = await ctx.request("PATCH", `/api/api-keys/${api_key.id}`, { token, body: { permissions: [] } });
    expect(none.body.data.permissions).toEqual([]);
    const me = await ctx.request("GET", "/api/me", { token: plain_text_key });
    expect(me.body.api_key).toEqual({ id: api_key.id, name: "renamed", permissions: [] });
  });

  test("delete: 204, gone from the list, and the key answers 401", async () => {
    const { token } = await createTenant(ctx.sql);
    const { api_key, plain_text_key } = await createKey(token);
    const res = await ctx.request("DELETE", `/api/api-keys/${api_key.id}`, { token });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect((await ctx.request("GET", `/api/api-keys/${api_key.id}`, { token })).status).toBe(404);
    expect((await ctx.request("GET", "/api/api-keys", { token })).body.data).toEqual([]);
    const after = await ctx.request("GET", "/api/me", { token: plain_text_key });
    expect(after.status).toBe(401);
    expectErrorShape(after.body, "unauthenticated");
    expect((await ctx.request("DELETE", `/api/api-keys/${api_key.id}`, { token })).status).toBe(404);
  });
});

describe("POST /api/api-keys/{api_key}/regenerate", () => {
  test("a new secret and prefix; the old key answers 401 on the next request, the new one works", async () => {
    const { token } = await createTenant(ctx.sql);
    const { api_key, plain_text_key: old } = await createKey(token);
    expect((await ctx.request("GET", "/api/me", { token: old })).status).toBe(200);
    const res = await ctx.request("POST", `/api/api-keys/${api_key.id}/regenerate`, { token });
    expect(res.status).toBe(200);
    const fresh: string = res.body.plain_text_key;
    expect(fresh).toMatch(/^sk_[0-9A-Za-z]{32,}$/);
    expect(fresh).not.toBe(old);
    expect(res.body.api_key).toMatchObject({ id: api_key.id, name: api_key.name, permissions: api_key.permissions, key_prefix: fresh.slice(0, 12) });
    const stale = await ctx.request("GET", "/api/me", { token: old });
    expect(stale.status).toBe(401);
    expectErrorShape(stale.body, "unauthenticated");
    const me = await ctx.request("GET", "/api/me", { token: fresh });
    expect(me.status).toBe(200);
    expect(me.body.api_key.id).toBe(api_key.id);
  });
});

describe("API keys: authorization", () => {
  test("no token or an unknown token: 401 on every operation", async () => {
    const { token } = await createTenant(ctx.sql);
    const { api_key } = await createKey(token);
    const ops: [string, string, unknown?][] = [
      ["GET", "/api/api-keys"],
      ["POST", "/api/api-keys", { name: "x", permissions: [] }],
      ["GET", `/api/api-keys/${api_key.id}`],
      ["PATCH", `/api/api-keys/${api_key.id}`, { name: "x" }],
      ["DELETE", `/api/api-keys/${api_key.id}`],
      ["POST", `/api/api-keys/${api_key.id}/regenerate`],
    ];
    for (const [method, path, body] of ops) {
      for (const bad of [undefined, "st_nope", "sk_nope"]) {
        const res = await ctx.request(method, path, { token: bad, body });
        expect(res.status).toBe(401);
        expectErrorShape(res.body, "unauthenticated");
      }
    }
    expect((await ctx.request("GET", `/api/api-keys/${api_key.id}`, { token })).body.data.name).toBe("CI server");
  });

  test("an API key, even with every permission, is refused on every operation: 403 api_key_not_allowed", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const { api_key } = await createKey(token);
    const key = await createApiKey(ctx.sql, org.id, ALL as any);
    const ops: [string, string, unknown?][] = [
      ["GET", "/api/api-keys"],
      ["POST", "/api/api-keys", { name: "x", permissions: [] }],
      ["GET", `/api/api-keys/${api_key.id}`],
      ["PATCH", `/api/api-keys/${api_key.id}`, { name: "x" }],
      ["DELETE", `/api/api-keys/${api_key.id}`],
      ["POST", `/api/api-keys/${api_key.id}/regenerate`],
      ["POST", `/api/api-keys/${key.id}/regenerate`],
    ];
    for (const [method, path, body] of ops) {
      const res = await ctx.request(method, path, { token: key.key, body });
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "api_key_not_allowed");
    }
    expect((await ctx.request("GET", "/api/me", { token: key.key })).status).toBe(200);
  });

  test("members may not create, update, delete or regenerate: 403 permission_denied; admins may", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const { api_key } = await createKey(token);
    const member = await sessionFor(ctx.sql, (await createUser(ctx.sql, { orgId: org.id, role: "member" })).id);
    const ops: [string, string, unknown?][] = [
      ["POST", "/api/api-keys", { name: "x", permissions: [] }],
      ["PATCH", `/api/api-keys/${api_key.id}`, { name: "x" }],
      ["DELETE", `/api/api-keys/${api_key.id}`],
      ["POST", `/api/api-keys/${api_key.id}/regenerate`],
    ];
    for (const [method, path, body] of ops) {
      const res = await ctx.request(method, path, { token: member, body });
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "permission_denied");
    }
    expect((await ctx.request("GET", `/api/api-keys/${api_key.id}`, { token })).body.data.name).toBe("CI server");
    const admin = await sessionFor(ctx.sql, (await createUser(ctx.sql, { orgId: org.id, role: "admin" })).id);
    expect((await ctx.request("POST", "/api/api-keys", { token: admin, body: { name: "by admin", permissions: [] } })).status).toBe(201);
    expect((await ctx.request("DELETE", `/api/api-keys/${api_key.id}`, { token: admin })).status).toBe(204);
  });

  test("another organization's key answers 404 on show, update, delete and regenerate, and is left unchanged", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const { api_key, plain_text_key } = await createKey(b.token);
    const ops: [string, string, unknown?][] = [
      ["GET", `/api/api-keys/${api_key.id}`],
      ["PATCH", `/api/api-keys/${api_key.id}`, { name: "stolen" }],
      ["POST", `/api/api-keys/${api_key.id}/regenerate`],
      ["DELETE", `/api/api-keys/${api_key.id}`],
    ];
    for (const [method, path, body] of ops) {
      const res = await ctx.request(method, path, { token: a.token, body });
      expect(res.status).toBe(404);
      expectErrorShape(res.body, "not_found");
    }
    expect((await ctx.request("GET", `/api/api-keys/${api_key.id}`, { token: b.token })).body.data).toEqual(api_key);
    expect((await ctx.request("GET", "/api/me", { token: plain_text_key })).status).toBe(200);
    // The user's X-Organization-Id selects where they act: b's key is reachable only from b.
    const missing = await ctx.request("GET", "/api/api-keys/999999999999", { token: a.token });
    expect(missing.status).toBe(404);
  });
});

describe("API keys: organizations", () => {
  test("a user in two organizations manages the keys of the one named by X-Organization-Id", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    await ctx.sql`insert into memberships (user_id, organization_id, role) values (${a.user.id}, ${b.org.id}, 'admin')`;
    const inA = await createKey(a.token, { name: "in A", permissions: [] });
    const headers = { "x-organization-id": String(b.org.id) };
    const created = await ctx.request("POST", "/api/api-keys", { token: a.token, headers, body: { name: "in B", permissions: [] } });
    expect(created.status).toBe(201);
    const listB = await ctx.request("GET", "/api/api-keys", { token: a.token, headers });
    expect(listB.body.data.map((k: any) => k.name)).toEqual(["in B"]);
    expect((await ctx.request("GET", "/api/api-keys", { token: b.token })).body.data.map((k: any) => k.name)).toEqual(["in B"]);
    expect((await ctx.request("GET", `/api/api-keys/${inA.api_key.id}`, { token: a.token, headers })).status).toBe(404);
    const me = await ctx.request("GET", "/api/me", { token: created.body.plain_text_key });
    expect(me.body.organization.id).toBe(b.org.id);
  });
});

describe("API keys: validation", () => {
  test("create: name 1..255 characters, permissions an array of the enum without duplicates", async () => {
    const { token } = await createTenant(ctx.sql);
    const cases: [unknown, string][] = [
      [{ permissions: [] }, "name"],
      [{ name: "", permissions: [] }, "name"],
      [{ name: "x".repeat(256), permissions: [] }, "name"],
      [{ name: 5, permissions: [] }, "name"],
      [{ name: "x" }, "permissions"],
      [{ name: "x", permissions: "numbers.read" }, "permissions"],
      [{ name: "x", permissions: "" }, "permissions"],
      [{ name: "x", permissions: {} }, "permissions"],
      [{ name: "x", permissions: ["numbers.write"] }, "permissions.0"],
      [{ name: "x", permissions: ["numbers.read", "numbers.read"] }, "permissions"],
    ];
    for (const [body, field] of cases) {
      const res = await ctx.request("POST", "/api/api-keys", { token, body });
      expect(res.status).toBe(422);
      expectErrorShape(res.body, "validation_failed");
      expect(Object.keys(res.body.errors).some((k) => k === field || k.startsWith(`${field}.`))).toBe(true);
    }
    const unknown = await ctx.request("POST", "/api/api-keys", { token, body: { name: "x", permissions: ["numbers.read", "numbers.write"] } });
    expect(unknown.body.errors).toEqual({ "permissions.1": [expect.stringContaining("one of numbers.read, numbers.lock, messages.read, webhooks.receive")] });
    expect((await ctx.request("POST", "/api/api-keys", { token, body: { name: "x".repeat(255), permissions: ALL } })).status).toBe(201);
    expect((await ctx.request("GET", "/api/api-keys", { token })).body.data.length).toBe(1);
  });

  test("update: the same bounds; path id must be a positive integer", async () => {
    const { token } = await createTenant(ctx.sql);
    const { api_key } = await createKey(token);
    for (const [body, field] of [
      [{ name: "" }, "name"],
      [{ name: "x".repeat(256) }, "name"],
      [{ permissions: ["admin"] }, "permissions.0"],
      [{ permissions: "numbers.read" }, "permissions"],
    ] as [unknown, string][]) {
      const res = await ctx.request("PATCH", `/api/api-keys/${api_key.id}`, { token, body });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.errors)).toContain(field);
    }
    for (const id of ["abc", "0", "-1", "1.5", "99999999999999999999"]) {
      const res = await ctx.request("GET", `/api/api-keys/${id}`, { token });
      expect(res.status).toBe(422);
      expectErrorShape(res.body, "validation_failed");
    }
  });
});
