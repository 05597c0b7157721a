import { beforeAll, describe, expect, test } from "bun:test";
import { isDateTime } from "../../server/lib/fields";
import { createTenant } from "../fixtures";
import { activeDevice, smsBody } from "../fixtures-devices";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

/** Ids are positive integers, dates real calendar instants in 1970..9999: anything else is 422, never 500 (issue 14, defect 5). */
let ctx: TestContext;
let token: string;
let deviceId: number;

beforeAll(async () => {
  ctx = await sharedTestContext();
  token = (await createTenant(ctx.sql, { plan: "pro" })).token;
  deviceId = (await activeDevice(ctx, token)).device.id;
});

const DEVICE_ROUTES: [string, string][] = [
  ["GET", "/api/byos/devices/{id}"],
  ["PATCH", "/api/byos/devices/{id}"],
  ["DELETE", "/api/byos/devices/{id}"],
  ["GET", "/api/byos/devices/{id}/config"],
  ["POST", "/api/byos/devices/{id}/disable"],
  ["POST", "/api/byos/devices/{id}/enable"],
  ["POST", "/api/byos/devices/{id}/heartbeat"],
  ["POST", "/api/byos/devices/{id}/sms"],
  ["POST", "/api/byos/devices/{id}/sims"],
  ["PATCH", "/api/byos/devices/{id}/sims/1"],
  ["POST", "/api/byos/devices/{id}/sims/1/reissue-code"],
  ["POST", "/api/byos/devices/{id}/messages/1/status"],
];

describe("path ids", () => {
  test.each(["1.5", "-3", "0", "1e3", "9223372036854775808", "abc"])("device routes refuse %s with 422 naming `device`", async (id) => {
    for (const [method, path] of DEVICE_ROUTES) {
      const res = await ctx.request(method, path.replace("{id}", id), { token, body: method === "GET" || method === "DELETE" ? undefined : {} });
      expect(`${method} ${path} ${res.status}`).toBe(`${method} ${path} 422`);
      expectErrorShape(res.body, "validation_failed");
      expect(res.body.errors.device).toBeDefined();
    }
  });

  test("a whole number below 1 names the bound; anything else that is not an id says so", async () => {
    for (const [id, message] of [
      ["0", "must be at least 1"],
      ["-3", "must be at least 1"],
      ["1.5", "must be a positive integer id"],
      ["007", "must be a positive integer id"],
      ["abc", "must be a positive integer id"],
    ]) {
      const res = await ctx.request("GET", `/api/byos/devices/${id}`, { token });
      expect([id, res.body.errors]).toEqual([id, { device: [message] }]);
    }
  });

  test("a fractional SIM card id is refused the same way", async () => {
    const res = await ctx.request("PATCH", `/api/byos/devices/${deviceId}/sims/2.5`, { token, body: {} });
    expect(res.status).toBe(422);
    expect(res.body.errors.simCard).toEqual(["must be a positive integer id"]);
  });

  test("a real id still works", async () => {
    expect((await ctx.request("GET", `/api/byos/devices/${deviceId}`, { token })).status).toBe(200);
  });
});

describe("received_at of a device SMS", () => {
  test.each([
    "0000-01-01T00:00:00Z",
    "-001000-01-01T00:00:00Z",
    "+275760-09-13T00:00:00Z",
    "2026-02-30T10:00:00Z",
    "2026-04-31T10:00:00Z",
    "1969-12-31T23:59:59Z",
    // PostgreSQL would round it to microseconds, into year 10000: stored, its processing then failed for good.
    "9999-12-31T23:59:59.9999995Z",
    // Beyond PostgreSQL's ±15:59: the insert failed, a 500 for every SMS written with it.
    "2026-11-21T10:00:00+16:00",
  ])("%s is refused with 422 and nothing is stored", async (receivedAt) => {
    const body = smsBody({ received_at: receivedAt });
    const res = await ctx.request("POST", `/api/byos/devices/${deviceId}/sms`, { token, body });
    expect(res.status).toBe(422);
    expect(res.body.errors.received_at).toEqual(["must be an ISO 8601 date-time with offset between 1970 and 9999"]);
    const [row] = await ctx.sql`select count(*)::int as n from device_sms where message_id = ${body.message_id as string}`;
    expect(row!.n).toBe(0);
  });

  test("a real date is stored as sent, leap day included", async () => {
    const body = smsBody({ received_at: "2028-02-29T23:30:00+01:00" });
    expect((await ctx.request("POST", `/api/byos/devices/${deviceId}/sms`, { token, body })).status).toBe(202);
    const [row] = await ctx.sql<{ received_at: Date }[]>`select received_at from device_sms where message_id = ${body.message_id as string}`;
    expect(row!.received_at.toISOString()).toBe("2028-02-29T22:30:00.000Z");
  });
});

describe("isDateTime", () => {
  test("real calendar instants with an offset, 1970 to 9999", () => {
    for (const ok of [
      "1970-01-01T00:00:00Z",
      "2024-02-29T12:00:00.123Z",
      "9999-12-31T23:59:59.999Z",
      "9999-12-31T23:59:59.9999994Z",
      "2026-06-01T08:00:00.1234567Z",
      "2026-06-01 08:00:00-07:00",
      "2026-06-01T08:00:00+15:59",
      "2026-06-01t08:00:00z",
    ])
      expect(`${ok} ${isDateTime(ok)}`).toBe(`${ok} true`);
    for (const bad of [
      "2023-02-29T00:00:00Z",
      "2026-06-31T00:00:00Z",
      "2026-06-01T00:00:60Z",
      "2026-06-01T00:00:00+24:00",
      "2026-06-01T00:00:00+16:00",
      "2026-06-01T00:00:00-16:00",
      "9999-12-31T23:59:59.9999995Z",
      "2026-06-01T00:00:00",
      "10000-01-01T00:00:00Z",
      "9999-12-31T23:00:00-05:00",
      20260601,
    ])
      expect(`${bad} ${isDateTime(bad)}`).toBe(`${bad} false`);
  });
});
