import { beforeAll, describe, expect, test } from "bun:test";
import { MISSED_HEARTBEATS_TO_INACTIVE } from "../../server/devices/presence-store";
import { processDeviceSms } from "../../server/devices/sms-process";
import type { Delivery as BusMessage } from "../../server/realtime/hub";
import { createTenant } from "../fixtures";
import { activeDevice, randomSimNumber, registerDevice, smsBody, verificationSms, waitFor } from "../fixtures-devices";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

// Issue 15 items 3 and 7: when a SIM card becomes inactive, reissue on it, and the device's number.

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

type Card = { id: number; sim_slot: number; phone_number: string | null; status: string; is_active: boolean; hosted_sim_id: number | null };

async function show(token: string, deviceId: number) {
  const res = await ctx.request("GET", `/api/byos/devices/${deviceId}`, { token });
  expect(res.status).toBe(200);
  return res.body.data as { phone_number: string | null; config_version: number; sim_cards: Card[] };
}

async function configNumber(token: string, deviceId: number) {
  const res = await ctx.request("GET", `/api/byos/devices/${deviceId}/config`, { token });
  expect(res.status).toBe(200);
  return res.body.device.phone_number as string | null;
}

/** One heartbeat, written (and its consequences run) before the next. */
async function heartbeat(token: string, deviceId: number, numbers?: string[]) {
  const body = numbers === undefined ? { battery_level: 80 } : { sim_cards: numbers.map((phone_number) => ({ phone_number, signal_strength: 60 })) };
  const res = await ctx.request("POST", `/api/byos/devices/${deviceId}/heartbeat`, { token, body });
  expect(res.status).toBe(200);
  await ctx.services.devices.settle();
}

const hostedStatus = async (id: number) => (await ctx.sql<{ status: string }[]>`select status from hosted_sims where id = ${id}`)[0]!.status;
const statuses = (cards: Card[]) => cards.map((c) => c.status);

function watch(deviceId: number) {
  const seen: { event: string; data: any }[] = [];
  ctx.services.realtime.watch((m: BusMessage) => {
    if (m.channel === `private-device.${deviceId}`) seen.push({ event: m.event, data: m.data });
  });
  return seen;
}

describe("a SIM card goes inactive when heartbeats stop listing its number", () => {
  test(`after ${MISSED_HEARTBEATS_TO_INACTIVE} heartbeats in a row without it; one heartbeat listing it resets the count; none without sim_cards counts`, async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device, numbers } = await activeDevice(ctx, token, [1, 2]);
    const [a, b] = numbers as [string, string];
    const events = watch(device.id);

    for (let k = 1; k < MISSED_HEARTBEATS_TO_INACTIVE; k++) await heartbeat(token, device.id, [a]);
    await heartbeat(token, device.id); // no sim_cards: says nothing
    await heartbeat(token, device.id, [b, a]); // listed again: back to 0
    for (let k = 1; k < MISSED_HEARTBEATS_TO_INACTIVE; k++) await heartbeat(token, device.id, [a]);
    expect(statuses((await show(token, device.id)).sim_cards)).toEqual(["active", "active"]);

    await heartbeat(token, device.id, [a]);
    const after = await show(token, device.id);
    expect(statuses(after.sim_cards)).toEqual(["active", "inactive"]);
    expect(after.sim_cards[1]!.is_active).toBe(false);
    expect(await hostedStatus(after.sim_cards[1]!.hosted_sim_id!)).toBe("inactive");
    expect(await hostedStatus(after.sim_cards[0]!.hosted_sim_id!)).toBe("active");
    expect(after.phone_number).toBe(a);
    expect(await waitFor(() => events.some((e) => e.event === "sim.deactivated" && e.data.sim_card.id === after.sim_cards[1]!.id))).toBe(true);
    expect(events.find((e) => e.event === "sim.deactivated")!.data.reason).toBe("missing_from_heartbeats");
  });

  test("heartbeats listing only numbers the phone could not read (empty, national format) count nothing", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    for (let k = 0; k < MISSED_HEARTBEATS_TO_INACTIVE + 1; k++) await heartbeat(token, device.id, ["", "0612345678"]);
    await heartbeat(token, device.id, []);
    expect(statuses((await show(token, device.id)).sim_cards)).toEqual(["active"]);
  });

  test("a SIM swap: heartbeats that list only the number a card claims keep it active until the proof, which renumbers it in place", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token, [1]);
    const card = (await show(token, device.id)).sim_cards[0]!;
    const fresh = randomSimNumber();
    const claim = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body: { phone_number: fresh } });
    expect(claim.status).toBe(200);
    // The new SIM is in: the phone lists its number only.
    for (let k = 0; k < MISSED_HEARTBEATS_TO_INACTIVE + 1; k++) await heartbeat(token, device.id, [fresh]);
    expect(statuses((await show(token, device.id)).sim_cards)).toEqual(["active"]);
    expect((await verificationSms(ctx, claim.body.data.verification_code, fresh)).status).toBe(200);
    const after = (await show(token, device.id)).sim_cards[0]!;
    expect(after).toMatchObject({ id: card.id, status: "active", phone_number: fresh, hosted_sim_id: card.hosted_sim_id });
  });

  test("a pending card never counts misses (it has no number to list yet)", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const device = await registerDevice(ctx, token, [1, 2]);
    const a = randomSimNumber();
    expect((await verificationSms(ctx, device.sim_cards[0]!.verification_code, a)).status).toBe(200);
    for (let k = 0; k < MISSED_HEARTBEATS_TO_INACTIVE + 1; k++) await heartbeat(token, device.id, [a]);
    expect(statuses((await show(token, device.id)).sim_cards)).toEqual(["active", "pending"]);
  });
});

describe("deactivate a SIM card (POST /api/byos/devices/{device}/sims/{simCard}/deactivate)", () => {
  test("the card goes inactive, its number stops receiving, the device's number follows; again is 409", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device, numbers } = await activeDevice(ctx, token, [1, 2]);
    const before = await show(token, device.id);
    expect(before.phone_number).toBe(numbers[0]!);
    const card = before.sim_cards[0]!;
    const path = `/api/byos/devices/${device.id}/sims/${card.id}/deactivate`;

    const res = await ctx.request("POST", path, { token });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: card.id, status: "inactive", is_active: false, phone_number: numbers[0]!, hosted_sim_id: card.hosted_sim_id });
    expect(await hostedStatus(card.hosted_sim_id!)).toBe("inactive");
    const after = await show(token, device.id);
    expect(after.phone_number).toBe(numbers[1]!);
    expect(await configNumber(token, device.id)).toBe(numbers[1]!);
    expect(after.config_version).toBeGreaterThan(before.config_version);

    // An SMS to slot 1 waits: no active card holds that slot.
    const sms = await ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody({ sim_slot: 1 }) });
    expect(sms.status).toBe(202);
    await ctx.services.devices.settle();
    expect(await processDeviceSms(ctx.sql, [{ device_id: device.id }])).toBe(0);

    const again = await ctx.request("POST", path, { token });
    expect(again.status).toBe(409);
    expectErrorShape(again.body, "invalid_state");
  });

  test("an unknown card is 404; a revoked device's card is refused", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const card = (await show(token, device.id)).sim_cards[0]!;
    expect((await ctx.request("POST", `/api/byos/devices/${device.id}/sims/999999999/deactivate`, { token })).status).toBe(404);
    expect((await ctx.request("DELETE", `/api/byos/devices/${device.id}`, { token })).status).toBe(204);
    const res = await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/deactivate`, { token });
    expect(res.status).toBe(409);
  });
});

describe("reissue on an inactive card starts re-verification", () => {
  test("a new code; the card stays inactive until an SMS proves a number, then active on its hosted SIM again", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device, numbers } = await activeDevice(ctx, token, [1, 2]);
    const card = (await show(token, device.id)).sim_cards[0]!;
    expect((await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/deactivate`, { token })).status).toBe(200);

    const reissued = await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/reissue-code`, { token });
    expect(reissued.status).toBe(200);
    expect(reissued.body.data).toMatchObject({ id: card.id, status: "inactive", phone_number: null, provider_number: ctx.config.PROVIDER_NUMBER });
    expect(reissued.body.data.verification_code).toMatch(/^SIM-/);
    // The slot is held while the code lives: no new card may take it.
    const add = await ctx.request("POST", `/api/byos/devices/${device.id}/sims`, { token, body: { sim_slot: 1 } });
    expect(add.status).toBe(409);

    expect((await verificationSms(ctx, reissued.body.data.verification_code, numbers[0]!)).status).toBe(200);
    const after = await show(token, device.id);
    expect(after.sim_cards[0]).toMatchObject({ id: card.id, status: "active", phone_number: numbers[0]!, hosted_sim_id: card.hosted_sim_id });
    expect(await hostedStatus(card.hosted_sim_id!)).toBe("active");
    expect(after.phone_number).toBe(numbers[0]!);
  });

  test("a number another active card holds is not proven again; the card stays inactive", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device, numbers } = await activeDevice(ctx, token, [1, 2]);
    const card = (await show(token, device.id)).sim_cards[0]!;
    await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/deactivate`, { token });
    const reissued = await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/reissue-code`, { token });
    await verificationSms(ctx, reissued.body.data.verification_code, numbers[1]!);
    expect(statuses((await show(token, device.id)).sim_cards)).toEqual(["inactive", "active"]);
  });

  test("refused on a revoked device's card, and on an inactive card whose slot another card took", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device } = await activeDevice(ctx, token, [1]);
    const card = (await show(token, device.id)).sim_cards[0]!;
    await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/deactivate`, { token });
    const added = await ctx.request("POST", `/api/byos/devices/${device.id}/sims`, { token, body: { sim_slot: 1 } });
    expect(added.status).toBe(201);
    const taken = await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/reissue-code`, { token });
    expect(taken.status).toBe(409);
    expectErrorShape(taken.body, "invalid_state");
    // A claim of a number is a code too: refused alike (proven, it made two active cards in slot 1).
    const claimed = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body: { phone_number: randomSimNumber() } });
    expect(claimed.status).toBe(409);
    expectErrorShape(claimed.body, "invalid_state");
    // Moved to a free slot in the same request, the claim stands.
    const movedAndClaimed = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, {
      token,
      body: { sim_slot: 2, phone_number: randomSimNumber() },
    });
    expect(movedAndClaimed.status).toBe(200);
    expect(movedAndClaimed.body.data).toMatchObject({ sim_slot: 2, verification_code: expect.stringMatching(/^SIM-/) });

    expect((await ctx.request("DELETE", `/api/byos/devices/${device.id}`, { token })).status).toBe(204);
    const revoked = await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${added.body.data.id}/reissue-code`, { token });
    expect(revoked.status).toBe(409);
  });
});

describe("the device's phone number follows its SIM cards (issue 15 item 7)", () => {
  test("it is the lowest-slot active card's number, whatever order the cards were verified in", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const device = await registerDevice(ctx, token, [1, 2]);
    const [one, two] = [randomSimNumber(), randomSimNumber()];
    await verificationSms(ctx, device.sim_cards[1]!.verification_code, two);
    expect((await show(token, device.id)).phone_number).toBe(two);
    await verificationSms(ctx, device.sim_cards[0]!.verification_code, one);
    expect((await show(token, device.id)).phone_number).toBe(one);
    expect(await configNumber(token, device.id)).toBe(one);
    const list = await ctx.request("GET", "/api/byos/devices", { token });
    expect(list.body.data.find((d: { id: number }) => d.id === device.id).phone_number).toBe(one);
  });

  test("a proven new number shows at once; a revoked device, whose cards are all inactive, shows none", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device } = await activeDevice(ctx, token);
    const card = (await show(token, device.id)).sim_cards[0]!;
    const fresh = randomSimNumber();
    const claim = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body: { phone_number: fresh } });
    expect(claim.status).toBe(200);
    await verificationSms(ctx, claim.body.data.verification_code, fresh);
    expect((await show(token, device.id)).phone_number).toBe(fresh);
    expect(await configNumber(token, device.id)).toBe(fresh);
    expect((await ctx.request("DELETE", `/api/byos/devices/${device.id}`, { token })).status).toBe(204);
    expect((await show(token, device.id)).phone_number).toBeNull();
  });
});

describe("a number that moved on", () => {
  test("revoking the device of an inactive card leaves the hosted SIM another device proved since", async () => {
    const { token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device: first, numbers } = await activeDevice(ctx, token);
    const card = (await show(token, first.id)).sim_cards[0]!;
    await ctx.request("POST", `/api/byos/devices/${first.id}/sims/${card.id}/deactivate`, { token });
    const second = await registerDevice(ctx, token);
    expect((await verificationSms(ctx, second.sim_cards[0]!.verification_code, numbers[0]!)).status).toBe(200);
    const moved = (await show(token, second.id)).sim_cards[0]!;
    expect(moved.hosted_sim_id).toBe(card.hosted_sim_id);
    expect(await hostedStatus(moved.hosted_sim_id!)).toBe("active");

    expect((await ctx.request("DELETE", `/api/byos/devices/${first.id}`, { token })).status).toBe(204);
    expect(await hostedStatus(moved.hosted_sim_id!)).toBe("active");
  });
});

describe("config_version grows only on a change", () => {
  test("a SIM card PATCH that moves nothing and claims nothing new leaves config_version and announces nothing", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device, numbers } = await activeDevice(ctx, token, [1]);
    const card = (await show(token, device.id)).sim_cards[0]!;
    const version = async () => (await ctx.request("GET", `/api/byos/devices/${device.id}`, { token })).body.data.config_version as number;
    const announced = async () =>
      (
        await ctx.sql<{ n: number }[]>`select count(*)::int as n from events where device_id = ${device.id} and type in ('device.updated', 'config.changed')`
      )[0]!.n;
    const [before, announcedBefore] = [await version(), await announced()];
    for (const body of [{}, { sim_slot: 1 }, { phone_number: numbers[0]! }, { sim_slot: 1, phone_number: numbers[0]! }]) {
      const res = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body });
      expect([body, res.status]).toEqual([body, 200]);
    }
    expect([await version(), await announced()]).toEqual([before, announcedBefore]);
    const moved = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body: { sim_slot: 2 } });
    expect(moved.status).toBe(200);
    expect(await version()).toBe(before + 1);
    expect(await announced()).toBeGreaterThan(announcedBefore);
  });
});
