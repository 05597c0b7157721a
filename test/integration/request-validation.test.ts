import { beforeAll, describe, expect, test } from "bun:test";
import { createTenant } from "../fixtures";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
let token: string;
beforeAll(async () => {
  ctx = await sharedTestContext();
  token = (await createTenant(ctx.sql)).token;
});

describe("NUL characters (PostgreSQL cannot store them)", () => {
  test("a body field with NUL answers 422 naming the field, on any route, and writes nothing", async () => {
    const before = await ctx.sql`select count(*)::int as n from teams`;
    const res = await ctx.request("POST", "/api/teams", { token, body: { name: "a\u0000b" } });
    expect(res.status).toBe(422);
    expectErrorShape(res.body, "validation_failed");
    expect(res.body.errors).toEqual({ name: ["must not contain NUL characters"] });
    const after = await ctx.sql`select count(*)::int as n from teams`;
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  test("nested fields and query parameters are named by their path", async () => {
    const nested = await ctx.request("POST", "/api/webhook-integrations", {
      token,
      body: { name: "x", url: "https://example.com/", headers: { "x-a": "v\u0000" } },
    });
    expect(nested.status).toBe(422);
    expect(nested.body.errors).toEqual({ "headers.x-a": ["must not contain NUL characters"] });
    const query = await ctx.request("GET", "/api/byos/devices?status=%00", { token });
    expect(query.status).toBe(422);
    expectErrorShape(query.body, "validation_failed");
  });
});

describe("validation errors name the field", () => {
  test("a coerced query or path number out of bounds is reported under its own name", async () => {
    const perPage = await ctx.request("GET", "/api/byos/devices?per_page=101", { token });
    expect(perPage.status).toBe(422);
    expect(perPage.body.errors).toEqual({ per_page: ["must be at most 100"] });
    const page = await ctx.request("GET", "/api/messages?hosted_sim=5&per_page=0", { token });
    expect(page.body.errors).toEqual({ per_page: ["must be at least 1"] });
    const id = await ctx.request("GET", "/api/byos/devices/0", { token });
    expect(id.status).toBe(422);
    expect(Object.keys(id.body.errors)).toEqual(["device"]);
  });
});

describe("authentication comes before validation", () => {
  test("no token or a bad one with an invalid body answers 401, not 422; signing in needs no token", async () => {
    const bodies: [string, string, unknown][] = [
      ["POST", "/api/teams", { name: 5 }],
      ["POST", "/api/byos/devices/1/heartbeat", { battery_level: 101 }],
      ["POST", "/api/webhook-integrations", { url: "not a url" }],
      ["GET", "/api/messages?hosted_sim=abc", undefined],
    ];
    for (const [method, path, body] of bodies) {
      for (const bad of [undefined, "not-a-token", "sk_nope"]) {
        const res = await ctx.request(method, path, { token: bad, body });
        expect(res.status).toBe(401);
        expectErrorShape(res.body, "unauthenticated");
      }
      // With a valid token the same request fails validation.
      expect((await ctx.request(method, path, { token, body })).status).toBe(422);
    }
    const login = await ctx.request("POST", "/api/auth/login", { body: { email: "nobody@example.com" } });
    expect(login.status).toBe(422);
  });
});
