import { beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";
import { createTeam } from "./webhooks-helpers";

/** Custom webhook headers: who reads their values, and which headers may be set at all. */
let ctx: TestContext;
let owner: string;
let admin: string;
let member: string;
let key: string;
let integrationId: number;
let teamId: number;

const SECRET_HEADERS = { Authorization: "Bearer receiver-secret-123", "X-Tenant": "acme" };
const MASKED = { Authorization: "********", "X-Tenant": "********" };

beforeAll(async () => {
  ctx = await sharedTestContext();
  const tenant = await createTenant(ctx.sql);
  owner = tenant.token;
  admin = await sessionFor(ctx.sql, (await createUser(ctx.sql, { orgId: tenant.org.id, role: "admin" })).id);
  member = await sessionFor(ctx.sql, (await createUser(ctx.sql, { orgId: tenant.org.id, role: "member" })).id);
  key = (await createApiKey(ctx.sql, tenant.org.id, ["webhooks.receive"])).key;
  teamId = (await createTeam(ctx.sql, tenant.org.id)).id;
  const res = await ctx.request("POST", `/api/teams/${teamId}/webhooks`, {
    token: owner,
    body: { name: "hook", url: "http://127.0.0.1:9/hook", headers: SECRET_HEADERS },
  });
  expect(res.status).toBe(201);
  integrationId = res.body.data.id;
});

const views = () => [
  `/api/webhook-integrations/${integrationId}`,
  `/api/teams/${teamId}/webhooks/${integrationId}`,
  "/api/webhook-integrations",
  `/api/teams/${teamId}/webhooks`,
];

async function headersSeenBy(token: string, path: string) {
  const res = await ctx.request("GET", path, { token });
  expect(res.status).toBe(200);
  const data = Array.isArray(res.body.data) ? res.body.data.find((i: { id: number }) => i.id === integrationId) : res.body.data;
  return data.headers;
}

describe("custom header values are shown to admins and owners only", () => {
  test("owners and admins read them in every view", async () => {
    for (const token of [owner, admin]) for (const path of views()) expect(await headersSeenBy(token, path)).toEqual(SECRET_HEADERS);
  });

  test("members and webhooks.receive keys see the names with masked values in every view", async () => {
    for (const token of [member, key]) for (const path of views()) expect(await headersSeenBy(token, path)).toEqual(MASKED);
  });

  test("a key's create and update answers are masked too", async () => {
    const created = await ctx.request("POST", "/api/webhook-integrations", {
      token: key,
      body: { name: "by key", url: "http://127.0.0.1:9/k", headers: { "X-Api-Token": "t0ken" } },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.headers).toEqual({ "X-Api-Token": "********" });
  });

  test("sending masked values back in an update keeps the stored values", async () => {
    const res = await ctx.request("PATCH", `/api/webhook-integrations/${integrationId}`, {
      token: key,
      body: { name: "hook renamed", url: "http://127.0.0.1:9/hook", headers: { ...MASKED, "X-New": "new" } },
    });
    expect(res.status).toBe(200);
    expect(await headersSeenBy(owner, `/api/webhook-integrations/${integrationId}`)).toEqual({ ...SECRET_HEADERS, "X-New": "new" });
  });
});

describe("an update keeps what it leaves out", () => {
  test("timeout_seconds and retry_count left out of a PATCH keep their values (they were reset to 30 and 3)", async () => {
    const created = await ctx.request("POST", "/api/webhook-integrations", {
      token: owner,
      body: { name: "kept", url: "http://127.0.0.1:9/k", timeout_seconds: 7, retry_count: 5 },
    });
    const path = `/api/webhook-integrations/${created.body.data.id}`;
    const updated = await ctx.request("PATCH", path, { token: owner, body: { name: "kept", url: "http://127.0.0.1:9/k2" } });
    expect(updated.body.data).toMatchObject({ url: "http://127.0.0.1:9/k2", timeout_seconds: 7, retry_count: 5 });
    const team = await ctx.request("PATCH", `/api/teams/${teamId}/webhooks/${integrationId}`, {
      token: owner,
      body: { name: "hook renamed", url: "http://127.0.0.1:9/hook" },
    });
    expect(team.status).toBe(200);
    const plain = await ctx.request("POST", "/api/webhook-integrations", { token: owner, body: { name: "defaults", url: "http://127.0.0.1:9/d" } });
    expect(plain.body.data).toMatchObject({ timeout_seconds: 30, retry_count: 3 });
  });
});

describe("two updates at once", () => {
  test("both are applied, one after the other: a header rotated by one is not written back by the other", async () => {
    for (let round = 0; round < 5; round++) {
      const created = await ctx.request("POST", "/api/webhook-integrations", {
        token: owner,
        body: { name: "racing", url: "http://127.0.0.1:9/r", headers: { "X-Auth": "old" }, timeout_seconds: 30 },
      });
      const path = `/api/webhook-integrations/${created.body.data.id}`;
      const [rotate, slow] = await Promise.all([
        ctx.request("PATCH", path, { token: owner, body: { name: "racing", url: "http://127.0.0.1:9/r", headers: { "X-Auth": "new" } } }),
        ctx.request("PATCH", path, { token: owner, body: { name: "racing", url: "http://127.0.0.1:9/r", timeout_seconds: 7 } }),
      ]);
      expect([rotate.status, slow.status]).toEqual([200, 200]);
      const now = (await ctx.request("GET", path, { token: owner })).body.data;
      expect([round, now.headers, now.timeout_seconds]).toEqual([round, { "X-Auth": "new" }, 7]);
    }
  });
});

describe("header names that Object.prototype has", () => {
  test("constructor, toString, valueOf, hasOwnProperty are names like any other: kept as sent, a masked value of one not stored is not taken from the prototype", async () => {
    const headers = { constructor: "********", toString: "plain", valueOf: "********" };
    const created = await ctx.request("POST", "/api/webhook-integrations", { token: owner, body: { name: "odd names", url: "http://127.0.0.1:9/o", headers } });
    expect(created.status).toBe(201);
    expect(created.body.data.headers).toEqual(headers);
    const updated = await ctx.request("PATCH", `/api/webhook-integrations/${created.body.data.id}`, {
      token: owner,
      body: { name: "odd names", url: "http://127.0.0.1:9/o", headers: { constructor: "********", hasOwnProperty: "x" } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data.headers).toEqual({ constructor: "********", hasOwnProperty: "x" });
  });
});

describe("stored values never go to a host chosen by a caller who cannot read them", () => {
  test("a key moving the URL (another host, port or path) while keeping stored values: 403, nothing changed; with new values it may", async () => {
    const created = await ctx.request("POST", "/api/webhook-integrations", {
      token: owner,
      body: { name: "moving", url: "http://127.0.0.1:9/hook", headers: SECRET_HEADERS },
    });
    const id = created.body.data.id;
    const patch = (token: string, body: object) => ctx.request("PATCH", `/api/webhook-integrations/${id}`, { token, body: { name: "moving", ...body } });
    for (const body of [
      { url: "http://127.0.0.1:8/steal" },
      { url: "http://localhost:9/steal", headers: MASKED },
      { url: "http://127.0.0.1:9/hook".replace("http:", "https:"), headers: { Authorization: "********" } },
      // A shared receiver host tells its tenants apart by the path.
      { url: "http://127.0.0.1:9/bins/attacker", headers: MASKED },
    ]) {
      const refused = await patch(key, body);
      expect([body.url, refused.status]).toEqual([body.url, 403]);
      expectErrorShape(refused.body, "permission_denied");
    }
    expect((await ctx.request("GET", `/api/webhook-integrations/${id}`, { token: owner })).body.data.url).toBe("http://127.0.0.1:9/hook");
    // The team view's update goes through the same rule.
    const mapped = await ctx.request("PATCH", `/api/teams/${teamId}/webhooks/${integrationId}`, {
      token: key,
      body: { name: "hook renamed", url: "http://127.0.0.1:8/steal" },
    });
    expect([mapped.status, mapped.body.message]).toEqual([403, expect.stringContaining("custom header values to another URL")]);
    // The same URL, spelled alike, keeps them.
    expect((await patch(key, { url: "http://127.0.0.1:9/hook", headers: MASKED })).status).toBe(200);
    expect((await patch(key, { url: "http://127.0.0.1:8/new", headers: { Authorization: "Bearer the-key-knows-this" } })).status).toBe(200);
    expect(await headersSeenBy(owner, `/api/webhook-integrations/${id}`)).toEqual({ Authorization: "Bearer the-key-knows-this" });
    expect((await patch(owner, { url: "http://127.0.0.1:7/owner", headers: MASKED })).status).toBe(200);
  });
});

describe("custom header rules", () => {
  const create = (headers: Record<string, string>) =>
    ctx.request("POST", "/api/webhook-integrations", { token: owner, body: { name: "rules", url: "http://127.0.0.1:9/r", headers } });

  test.each([
    "Connection",
    "Upgrade",
    "TE",
    "Expect",
    "Keep-Alive",
    "Proxy-Authorization",
    "Proxy-Connection",
    "Transfer-Encoding",
    "Host",
    "Content-Length",
    "Trailer",
  ])("%s cannot be set", async (name) => {
    const res = await create({ [name]: "x" });
    expect(res.status).toBe(422);
    expectErrorShape(res.body, "validation_failed");
    expect(res.body.errors[`headers.${name}`][0]).toContain("cannot be set");
  });

  test.each([
    ["a line break", "a\r\nX-Injected: 1"],
    ["a tab", "a\tb"],
    ["a NUL", "a\u0001b"],
    ["non-ASCII", "café"],
    ["DEL", "a\u007f"],
  ])("a value with %s is refused", async (_what, value) => {
    const res = await create({ "X-Value": value });
    expect(res.status).toBe(422);
    expect(res.body.errors["headers.X-Value"][0]).toContain("printable ASCII");
  });

  test("names are at most 256 characters", async () => {
    expect((await create({ [`X-${"n".repeat(254)}`]: "ok" })).status).toBe(201);
    const res = await create({ [`X-${"n".repeat(255)}`]: "ok" });
    expect(res.status).toBe(422);
    expect(res.body.errors.headers).toEqual(["header names must be at most 256 characters"]);
  });

  test("more than 50 headers is reported as such, not as 'must be an object'", async () => {
    const headers = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, "v"]));
    const res = await create(headers);
    expect(res.status).toBe(422);
    expect(res.body.errors.headers).toEqual(["must have at most 50 entries"]);
    expect((await create(Object.fromEntries(Object.entries(headers).slice(0, 50)))).status).toBe(201);
  });
});

describe("headers must be an object of names to values", () => {
  test("an array (of 'Name: value' lines or of anything) is 422 on create and update, never stored as headers named 0, 1, ...", async () => {
    const create = await ctx.request("POST", "/api/webhook-integrations", {
      token: owner,
      body: { name: "array", url: "http://127.0.0.1:9/a", headers: ["X-A: b"] },
    });
    expect(create.status).toBe(422);
    expectErrorShape(create.body);
    expect(create.body.errors).toEqual({ headers: ["must be an object"] });
    const before = await headersSeenBy(owner, `/api/webhook-integrations/${integrationId}`);
    for (const headers of [["X-A: b"], [], [["X-A", "b"]]]) {
      const update = await ctx.request("PATCH", `/api/webhook-integrations/${integrationId}`, {
        token: owner,
        body: { name: "hook", url: "http://127.0.0.1:9/hook", headers },
      });
      expect(update.status).toBe(422);
      expect(update.body.errors).toEqual({ headers: ["must be an object"] });
    }
    expect(await headersSeenBy(owner, `/api/webhook-integrations/${integrationId}`)).toEqual(before);
  });
});
