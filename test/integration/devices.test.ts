import { beforeAll, describe, expect, test } from "bun:test";
import { processDeviceSms } from "../../server/devices/sms-process";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { activeDevice, randomAndroidId, randomSimNumber, registerDevice, smsBody, verificationSms } from "../fixtures-devices";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

/** Runs the processing jobs of the SMS stored so far (the shared context runs no workers). */
async function processPending(deviceId: number) {
  await ctx.services.devices.settle();
  return processDeviceSms(ctx.sql, [{ device_id: deviceId }]);
}

describe("BYOS device lifecycle over HTTP", () => {
  test("register two slots, verify by provider callback, heartbeat, submit SMS, message appears", async () => {
    const { token, org } = await createTenant(ctx.sql, { plan: "pro" });
    const device = await registerDevice(ctx, token, [1, 2]);
    expect(device.status).toBe("pending_verification");
    expect(device.provider_number).toBe(ctx.config.PROVIDER_NUMBER);
    expect(device.sim_cards).toHaveLength(2);
    for (const card of device.sim_cards) expect(card.verification_code).toMatch(/^SIM-[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{4}$/);

    const numbers = [randomSimNumber(), randomSimNumber()];
    for (const [i, card] of device.sim_cards.entries()) {
      const res = await verificationSms(ctx, card.verification_code, numbers[i]!);
      expect(res.status).toBe(200);
      expect(res.text).toBe("<Response/>");
      expect(res.headers.get("content-type")).toContain("text/xml");
    }
    const shown = await ctx.request("GET", `/api/byos/devices/${device.id}`, { token });
    expect(shown.status).toBe(200);
    expect(shown.body.data.status).toBe("active");
    expect(shown.body.data.organization).toEqual({ id: org.id, name: org.name });
    expect(shown.body.data.sim_cards.map((c: any) => [c.status, c.is_active, c.phone_number])).toEqual([
      ["active", true, numbers[0]],
      ["active", true, numbers[1]],
    ]);
    expect(shown.body.data.config_version).toBe(3);

    const list = await ctx.request("GET", "/api/numbers", { token });
    const listed = list.body.data.filter((n: any) => numbers.includes(n.number));
    expect(listed).toHaveLength(2);
    expect(listed[0].type).toBe("virtual");
    expect(listed[0].provider).toBe("byos");

    const hb = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, { token, body: { battery_level: 80, signal_strength: 70 } });
    expect(hb.status).toBe(200);
    expect(hb.body).toMatchObject({ success: true, next_heartbeat_in: 60 });
    expect(hb.body.server_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const online = await ctx.request("GET", `/api/byos/devices/${device.id}`, { token });
    expect(online.body.data.is_online).toBe(true);
    expect(online.body.data.battery_level).toBe(80);
    expect(online.body.data.sim_cards[0].signal_strength).toBe(70);

    const sms = smsBody({ sim_slot: 2 });
    const sent = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: sms });
    expect(sent.status).toBe(202);
    expect(sent.body.message_id).toBe(sms.message_id);
    expect(await processPending(device.id)).toBe(1);
    const hostedSimId = shown.body.data.sim_cards[1].hosted_sim_id;
    const history = await ctx.request("GET", `/api/messages?hosted_sim=${hostedSimId}`, { token });
    expect(history.status).toBe(200);
    expect(history.body.data.map((m: any) => m.text)).toEqual([sms.body]);
    expect(history.body.data[0]).toMatchObject({ source: "device", device_id: device.id, sim_slot: 2, from: sms.from, direction: "inbound" });
    const after = await ctx.request("GET", `/api/byos/devices/${device.id}`, { token });
    expect(after.body.data.messages_received_count).toBe(1);
  });

  test("SMS of a pending SIM wait and are attributed once it is verified", async () => {
    const { token } = await createTenant(ctx.sql);
    const device = await registerDevice(ctx, token, [1]);
    const sms = smsBody();
    expect((await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: sms })).status).toBe(202);
    expect(await processPending(device.id)).toBe(0);
    expect((await verificationSms(ctx, device.sim_cards[0]!.verification_code, randomSimNumber())).status).toBe(200);
    expect(await processPending(device.id)).toBe(1);
    const [row] = await ctx.sql<{ message_row_id: number | null }[]>`select message_row_id from device_sms where message_id = ${sms.message_id}`;
    expect(row!.message_row_id).not.toBeNull();
  });
});

describe("registration rules", () => {
  test("validation: bounds of SPEC.md part 8 answer 422 with field errors", async () => {
    const { token } = await createTenant(ctx.sql);
    const bad = await ctx.request("POST", "/api/byos/devices/register", {
      token,
      body: { android_id: "xyz", sim_slots: [3], device_model: "m".repeat(101), app_version: "1" },
    });
    expect(bad.status).toBe(422);
    expectErrorShape(bad.body, "validation_failed");
    expect(Object.keys(bad.body.errors).sort()).toEqual(["android_id", "device_model", "sim_slots.0"]);
    const dup = await ctx.request("POST", "/api/byos/devices/register", {
      token,
      body: { android_id: randomAndroidId(), sim_slots: [1, 1], device_model: "m", app_version: "1" },
    });
    expect(dup.status).toBe(422);
  });

  test("max_devices of the plan: 402 plan_limit_reached; a duplicate android_id: 409 with device_id", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "free" });
    const first = await registerDevice(ctx, token, [1], { android_id: "ABCDEF0123456789" });
    const again = await ctx.request("POST", "/api/byos/devices/register", {
      token,
      body: { android_id: "abcdef0123456789", sim_slots: [1], device_model: "m", app_version: "1" },
    });
    expect(again.status).toBe(409);
    expectErrorShape(again.body, "device_already_registered");
    expect(again.body.device_id).toBe(first.id);
    await registerDevice(ctx, token);
    const third = await ctx.request("POST", "/api/byos/devices/register", {
      token,
      body: { android_id: randomAndroidId(), sim_slots: [1], device_model: "m", app_version: "1" },
    });
    expect(third.status).toBe(402);
    expectErrorShape(third.body, "plan_limit_reached");
  });

  test("API keys are refused with 403 api_key_not_allowed", async () => {
    const { org } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["numbers.read", "messages.read"]);
    const res = await ctx.request("GET", "/api/byos/devices", { token: key.key });
    expect(res.status).toBe(403);
    expectErrorShape(res.body, "api_key_not_allowed");
  });
});

describe("device states", () => {
  test("disable refuses SMS with 409 but answers heartbeats; enable restores; revoke is final", async () => {
    const { token, org } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const path = `/api/byos/devices/${device.id}`;
    const disabled = await ctx.request("POST", `${path}/disable`, { token });
    expect(disabled.status).toBe(200);
    expect(disabled.body.data.status).toBe("disabled");
    expectErrorShape((await ctx.request("POST", `${path}/sms`, { token, body: smsBody() })).body, "invalid_state");
    expect((await ctx.request("POST", `${path}/heartbeat`, { token, body: {} })).status).toBe(200);
    expectErrorShape((await ctx.request("POST", `${path}/disable`, { token })).body, "invalid_state");
    const enabled = await ctx.request("POST", `${path}/enable`, { token });
    expect(enabled.body.data.status).toBe("active");
    expect(enabled.body.data.config_version).toBe(disabled.body.data.config_version + 1);

    const member = await createUser(ctx.sql, { orgId: org.id, role: "member" });
    const memberToken = await sessionFor(ctx.sql, member.id);
    expectErrorShape((await ctx.request("DELETE", path, { token: memberToken })).body, "permission_denied");
    const revoked = await ctx.request("DELETE", path, { token });
    expect(revoked.status).toBe(204);
    expect(revoked.text).toBe("");
    const shown = await ctx.request("GET", path, { token });
    expect(shown.body.data.status).toBe("revoked");
    expect(shown.body.data.sim_cards.every((c: any) => c.status === "inactive")).toBe(true);
    for (const [method, suffix, body] of [
      ["POST", "/heartbeat", {}],
      ["POST", "/sms", smsBody()],
      ["POST", "/enable", undefined],
    ] as const) {
      const res = await ctx.request(method, `${path}${suffix}`, { token, body });
      expect(res.status).toBe(409);
      expectErrorShape(res.body, "invalid_state");
    }
  });

  test("update: a different phone number is only claimed (fresh code on the primary card); the proven number stays; config_version grows", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device, numbers } = await activeDevice(ctx, token);
    const before = await ctx.request("GET", `/api/byos/devices/${device.id}`, { token });
    const number = randomSimNumber();
    const res = await ctx.request("PATCH", `/api/byos/devices/${device.id}`, { token, body: { phone_number: number, device_name: "renamed" } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ phone_number: numbers[0], device_name: "renamed", config_version: before.body.data.config_version + 1 });
    expect(res.body.data.sim_cards[0]).toMatchObject({ phone_number: numbers[0], pending_phone_number: number, status: "active" });
    expect(res.body.data.sim_cards[0].verification_code).toMatch(/^SIM-/);
    expect(res.body.data.sim_cards[0].provider_number).toBe(ctx.config.PROVIDER_NUMBER);
    const [sim] = await ctx.sql<{ number: string }[]>`select number from hosted_sims where id = ${res.body.data.sim_cards[0].hosted_sim_id}`;
    expect(sim!.number).toBe(numbers[0]!);
    const badPhone = await ctx.request("PATCH", `/api/byos/devices/${device.id}`, { token, body: { phone_number: "12345" } });
    expect(badPhone.status).toBe(422);
  });

  test("config: SPEC.md 2.12 with limits from real counts", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device } = await activeDevice(ctx, token);
    await registerDevice(ctx, token);
    const res = await ctx.request("GET", `/api/byos/devices/${device.id}/config`, { token });
    expect(res.status).toBe(200);
    expect(res.body.intervals).toEqual({ heartbeat_seconds: 60, config_refresh_seconds: 3600, retry_backoff_seconds: [5, 15, 60, 300] });
    expect(res.body.limits).toEqual({ max_devices: 25, current_devices: 2, monthly_messages: 10000, current_month_messages: 0, remaining_messages: 10000 });
    expect(res.body.features).toEqual({ compression: true, priority_support: false, debug_mode: false });
    expect(res.body.metadata.plan_name).toBe("pro");
    expect(res.body.device).toEqual({ id: device.id, phone_number: expect.any(String), status: "active" });
  });
});

describe("cross-organization", () => {
  test("another organization's token gets 404 on every device route", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, a.token);
    const card = device.sim_cards[0]!.id;
    const p = `/api/byos/devices/${device.id}`;
    const routes: [string, string, unknown?][] = [
      ["GET", p],
      ["PATCH", p, { device_name: "x" }],
      ["POST", `${p}/disable`],
      ["POST", `${p}/enable`],
      ["DELETE", p],
      ["GET", `${p}/config`],
      ["POST", `${p}/heartbeat`, {}],
      ["POST", `${p}/sms`, smsBody()],
      ["POST", `${p}/sims`, { sim_slot: 2 }],
      ["PATCH", `${p}/sims/${card}`, { sim_slot: 2 }],
      ["POST", `${p}/sims/${card}/reissue-code`],
      ["POST", `${p}/messages/1/status`, { status: "sent" }],
    ];
    for (const [method, path, body] of routes) {
      const res = await ctx.request(method, path, { token: b.token, body });
      expect([method, path, res.status]).toEqual([method, path, 404]);
      expectErrorShape(res.body, "not_found");
    }
  });
});

describe("device list", () => {
  test("paginated with meta and links, filtered by status; bad per_page and status: 422", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    await activeDevice(ctx, token);
    await registerDevice(ctx, token);
    await registerDevice(ctx, token);
    const page = await ctx.request("GET", "/api/byos/devices?per_page=2&page=2", { token });
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.meta).toMatchObject({ current_page: 2, per_page: 2, total: 3, last_page: 2, from: 3, to: 3 });
    expect(page.body.links.prev).toContain("page=1");
    expect(page.body.links.next).toBeNull();
    const pending = await ctx.request("GET", "/api/byos/devices?status=pending_verification", { token });
    expect(pending.body.data.map((d: any) => d.status)).toEqual(["pending_verification", "pending_verification"]);
    expect(pending.body.meta.per_page).toBe(15);
    expect(Object.keys(pending.body.data[0]).sort()).toEqual(
      [
        "android_id",
        "battery_level",
        "created_at",
        "device_name",
        "id",
        "is_online",
        "last_seen_at",
        "organization",
        "phone_number",
        "provider_number",
        "sim_cards",
        "status",
      ].sort(),
    );
    expect((await ctx.request("GET", "/api/byos/devices?per_page=101", { token })).status).toBe(422);
    expect((await ctx.request("GET", "/api/byos/devices?status=lost", { token })).status).toBe(422);
  });
});

describe("SIM cards and heartbeat bounds", () => {
  test("add SIM: 201 with a code, config_version + 1; an occupied slot: 409; update SIM moves the slot and only claims a number", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const before = (await ctx.request("GET", `/api/byos/devices/${device.id}`, { token })).body.data;
    const added = await ctx.request("POST", `/api/byos/devices/${device.id}/sims`, { token, body: { sim_slot: 2 } });
    expect(added.status).toBe(201);
    expect(added.body.data).toMatchObject({ sim_slot: 2, status: "pending", phone_number: null, provider_number: ctx.config.PROVIDER_NUMBER });
    expect(added.body.data.verification_code).toMatch(/^SIM-/);
    expect((await ctx.request("GET", `/api/byos/devices/${device.id}`, { token })).body.data.config_version).toBe(before.config_version + 1);
    const taken = await ctx.request("POST", `/api/byos/devices/${device.id}/sims`, { token, body: { sim_slot: 2 } });
    expect(taken.status).toBe(409);
    expectErrorShape(taken.body, "invalid_state");
    expect((await ctx.request("POST", `/api/byos/devices/${device.id}/sims`, { token, body: { sim_slot: 11 } })).status).toBe(422);

    const card = before.sim_cards[0];
    const number = randomSimNumber();
    const moved = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body: { phone_number: number, sim_slot: 3 } });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ id: card.id, phone_number: card.phone_number, pending_phone_number: number, sim_slot: 3, status: "active" });
    expect(moved.body.data.verification_code).toMatch(/^SIM-/);
    const [sim] = await ctx.sql<{ number: string }[]>`select number from hosted_sims where id = ${card.hosted_sim_id}`;
    expect(sim!.number).toBe(card.phone_number);
    const clash = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body: { sim_slot: 2 } });
    expect(clash.status).toBe(409);
  });

  test("heartbeat bounds: 422 with dotted field paths; sim_cards entries update their card's signal", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device, numbers } = await activeDevice(ctx, token);
    const bad = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, {
      token,
      body: { battery_level: 101, signal_strength: -1, is_in_doze_mode: "yes", sim_cards: [{ phone_number: numbers[0], signal_strength: 101 }] },
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors).sort()).toEqual(["battery_level", "is_in_doze_mode", "signal_strength", "sim_cards.0.signal_strength"]);
    const ok = await ctx.request("POST", `/api/byos/devices/${device.id}/heartbeat`, {
      token,
      body: { sim_cards: [{ phone_number: numbers[0], signal_strength: 42 }] },
    });
    expect(ok.status).toBe(200);
    const shown = await ctx.request("GET", `/api/byos/devices/${device.id}`, { token });
    expect(shown.body.data.sim_cards[0].signal_strength).toBe(42);
  });
});

test("a PATCH that changes nothing leaves config_version alone", async () => {
  const { token } = await createTenant(ctx.sql);
  const device = await registerDevice(ctx, token);
  const before = (await ctx.request("GET", `/api/byos/devices/${device.id}`, { token })).body.data;
  const same = await ctx.request("PATCH", `/api/byos/devices/${device.id}`, { token, body: { device_name: before.device_name } });
  expect(same.body.data.config_version).toBe(before.config_version);
  const renamed = await ctx.request("PATCH", `/api/byos/devices/${device.id}`, { token, body: { device_name: "other" } });
  expect(renamed.body.data.config_version).toBe(before.config_version + 1);
});
