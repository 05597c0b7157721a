import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTenant, createUser, sessionFor } from "../fixtures";
import { activeDevice, clockedContext, providerPost, randomSimNumber, registerDevice, verificationSms } from "../fixtures-devices";
import { createPoolNumber } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

// Issue 14 defect 1: a number belongs to whoever proved it with a verification SMS from it; a
// PATCH only claims a number (docs/api-notes.md "Numbers change only by proof").

let ctx: TestContext;
/** A second instance on the same database: the attacker's requests go there, the provider's here. */
let other: Awaited<ReturnType<typeof clockedContext>>;
beforeAll(async () => {
  ctx = await sharedTestContext();
  other = await clockedContext(ctx, ctx.services.clock);
});
afterAll(() => other.close());

const sid = () => `SM${crypto.randomUUID().replaceAll("-", "")}`;

/** The provider delivers an SMS to `to`; answers the organizations that may see it (none: dropped). */
async function deliver(to: string): Promise<number[]> {
  const text = `for ${to} ${crypto.randomUUID()}`;
  const res = await providerPost(ctx, { From: "+15550007777", To: to, Body: text, MessageSid: sid(), AccountSid: "AC1" });
  expect(res.status).toBe(200);
  const rows = await ctx.sql<{ organization_id: number }[]>`
    select v.organization_id from messages m join message_visibility v on v.message_id = m.id where m.text = ${text} order by 1`;
  return rows.map((r) => r.organization_id);
}

const device = (token: string, id: number) => ctx.request("GET", `/api/byos/devices/${id}`, { token }).then((r) => r.body.data);
const patchCard = (token: string, deviceId: number, cardId: number, body: unknown) =>
  ctx.request("PATCH", `/api/byos/devices/${deviceId}/sims/${cardId}`, { token, body });

describe("a PATCH cannot take a number", () => {
  test("another organization claims a number whose owner has not verified yet: SMS to it stay out of the attacker's organization, the owner's verification still succeeds", async () => {
    const owner = await createTenant(ctx.sql);
    const attacker = await createTenant(ctx.sql);
    const number = randomSimNumber();
    const pending = await registerDevice(ctx, owner.token);
    const { device: theirs } = await activeDevice(ctx, attacker.token);
    const theirCard = (await device(attacker.token, theirs.id)).sim_cards[0];

    const claim = await other.request("PATCH", `/api/byos/devices/${theirs.id}/sims/${theirCard.id}`, {
      token: attacker.token,
      body: { phone_number: number },
    });
    expect(claim.status).toBe(200);
    expect(claim.body.data).toMatchObject({ phone_number: theirCard.phone_number, pending_phone_number: number, status: "active" });
    const byDevice = await other.request("PATCH", `/api/byos/devices/${theirs.id}`, { token: attacker.token, body: { phone_number: number } });
    expect(byDevice.status).toBe(200);
    expect(byDevice.body.data.phone_number).toBe(theirCard.phone_number);
    expect(await deliver(number)).toEqual([]);

    expect((await verificationSms(ctx, pending.sim_cards[0]!.verification_code, number)).status).toBe(200);
    const verified = await device(owner.token, pending.id);
    expect(verified.status).toBe("active");
    expect(verified.sim_cards[0]).toMatchObject({ phone_number: number, status: "active" });
    expect(await deliver(number)).toEqual([owner.org.id]);
    // The attacker's claim can never be proven now: the number is active on the owner's card.
    expect((await verificationSms(ctx, claim.body.data.verification_code, number)).status).toBe(200);
    expect((await device(attacker.token, theirs.id)).sim_cards[0].phone_number).toBe(theirCard.phone_number);
    expect(await deliver(number)).toEqual([owner.org.id]);
  });

  test("a number active on another card (any organization) or held by the pool: 409 number_in_use; SMS keep landing with the owner", async () => {
    const owner = await createTenant(ctx.sql, { plan: "pro" });
    const { numbers } = await activeDevice(ctx, owner.token);
    const attacker = await createTenant(ctx.sql);
    const member = await createUser(ctx.sql, { orgId: owner.org.id, role: "member" });
    const memberToken = await sessionFor(ctx.sql, member.id);
    const pool = await createPoolNumber(ctx.sql);
    for (const token of [attacker.token, memberToken]) {
      const { device: d } = await activeDevice(ctx, token === memberToken ? owner.token : token, [1]);
      const card = (await device(token, d.id)).sim_cards[0];
      for (const number of [numbers[0]!, pool.number]) {
        const viaCard = await patchCard(token, d.id, card.id, { phone_number: number });
        expect(viaCard.status).toBe(409);
        expectErrorShape(viaCard.body, "number_in_use");
        const viaDevice = await ctx.request("PATCH", `/api/byos/devices/${d.id}`, { token, body: { phone_number: number } });
        expect(viaDevice.status).toBe(409);
        expectErrorShape(viaDevice.body, "number_in_use");
      }
    }
    expect(await deliver(numbers[0]!)).toEqual([owner.org.id]);
  });

  test("the provider's own number: 422 on both PATCH routes, and a verification SMS can never prove it", async () => {
    const { token } = await createTenant(ctx.sql);
    const pending = await registerDevice(ctx, token);
    const card = pending.sim_cards[0]!;
    const viaCard = await patchCard(token, pending.id, card.id, { phone_number: ctx.config.PROVIDER_NUMBER });
    expect(viaCard.status).toBe(422);
    expectErrorShape(viaCard.body, "validation_failed");
    expect(Object.keys(viaCard.body.errors)).toEqual(["phone_number"]);
    const viaDevice = await ctx.request("PATCH", `/api/byos/devices/${pending.id}`, { token, body: { phone_number: ctx.config.PROVIDER_NUMBER } });
    expect(viaDevice.status).toBe(422);
    await verificationSms(ctx, card.verification_code, ctx.config.PROVIDER_NUMBER);
    expect((await device(token, pending.id)).status).toBe("pending_verification");
    const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from hosted_sims where number = ${ctx.config.PROVIDER_NUMBER}`;
    expect(row!.n).toBe(0);
  });

  test("a code from an alphanumeric sender id or a short code proves nothing: no SIM has that number; the card stays pending and its code works from the SIM's number", async () => {
    const { token } = await createTenant(ctx.sql);
    const pending = await registerDevice(ctx, token);
    const card = pending.sim_cards[0]!;
    for (const from of ["PayPal", "72975", "+0123456789"]) {
      expect((await verificationSms(ctx, card.verification_code, from)).status).toBe(200);
      expect((await device(token, pending.id)).sim_cards[0]).toMatchObject({ status: "pending", phone_number: null, hosted_sim_id: null });
    }
    const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from hosted_sims where number in ('PayPal', '72975', '+0123456789')`;
    expect(row!.n).toBe(0);
    const number = randomSimNumber();
    await verificationSms(ctx, card.verification_code, number);
    expect((await device(token, pending.id)).sim_cards[0]).toMatchObject({ status: "active", phone_number: number });
  });

  test("a pending card's claim keeps phone_number null; only an SMS from the claimed number proves it", async () => {
    const { token } = await createTenant(ctx.sql);
    const pending = await registerDevice(ctx, token);
    const card = pending.sim_cards[0]!;
    const number = randomSimNumber();
    const claim = await patchCard(token, pending.id, card.id, { phone_number: number });
    expect(claim.status).toBe(200);
    expect(claim.body.data).toMatchObject({ phone_number: null, pending_phone_number: number, status: "pending", provider_number: ctx.config.PROVIDER_NUMBER });
    expect(claim.body.data.verification_code).not.toBe(card.verification_code);
    // The code issued at registration was replaced; the claim's code from another number proves nothing.
    await verificationSms(ctx, card.verification_code, number);
    await verificationSms(ctx, claim.body.data.verification_code, randomSimNumber());
    const still = await device(token, pending.id);
    expect(still.status).toBe("pending_verification");
    expect(still.sim_cards[0]).toMatchObject({ phone_number: null, pending_phone_number: number, status: "pending" });
    expect(still.sim_cards[0].verification_code).toBeUndefined();
    await verificationSms(ctx, claim.body.data.verification_code, number);
    const done = await device(token, pending.id);
    expect(done).toMatchObject({ status: "active", phone_number: number });
    expect(done.sim_cards[0]).toMatchObject({ phone_number: number, pending_phone_number: null, status: "active" });
  });
});

describe("re-verification of a new number", () => {
  test("end to end through the provider callback: the old number stays in force until the new one is proven, then the hosted SIM is renumbered", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const { device: d, numbers } = await activeDevice(ctx, token);
    const old = numbers[0]!;
    const card = (await device(token, d.id)).sim_cards[0];
    const fresh = randomSimNumber();

    const same = await patchCard(token, d.id, card.id, { phone_number: old });
    expect(same.status).toBe(200);
    expect(same.body.data).toMatchObject({ phone_number: old, pending_phone_number: null });
    expect(same.body.data.verification_code).toBeUndefined();

    const claim = await ctx.request("PATCH", `/api/byos/devices/${d.id}`, { token, body: { phone_number: fresh } });
    expect(claim.status).toBe(200);
    const claimed = claim.body.data.sim_cards[0];
    expect(claimed).toMatchObject({ id: card.id, phone_number: old, pending_phone_number: fresh, status: "active", hosted_sim_id: card.hosted_sim_id });
    expect(claimed.verification_code).toMatch(/^SIM-/);
    expect(claim.body.data.phone_number).toBe(old);
    expect(await deliver(old)).toEqual([org.id]);
    expect(await deliver(fresh)).toEqual([]);

    await verificationSms(ctx, claimed.verification_code, randomSimNumber());
    expect((await device(token, d.id)).sim_cards[0].phone_number).toBe(old);
    expect(await deliver(old)).toEqual([org.id]);

    await verificationSms(ctx, claimed.verification_code, fresh);
    const after = await device(token, d.id);
    expect(after).toMatchObject({ status: "active", phone_number: fresh });
    expect(after.sim_cards[0]).toMatchObject({
      id: card.id,
      phone_number: fresh,
      pending_phone_number: null,
      status: "active",
      hosted_sim_id: card.hosted_sim_id,
    });
    const numbersView = await ctx.request("GET", `/api/numbers/${card.hosted_sim_id}`, { token });
    expect(numbersView.body.data).toMatchObject({ number: fresh, status: "active" });
    expect(await deliver(fresh)).toEqual([org.id]);
    expect(await deliver(old)).toEqual([]);
    // The spent code proves nothing more.
    await verificationSms(ctx, claimed.verification_code, randomSimNumber());
    expect((await device(token, d.id)).sim_cards[0].phone_number).toBe(fresh);
  });

  test("a new number that was BYOS before (a revoked device's) moves the card to that hosted SIM; the old one goes inactive", async () => {
    const { org, token } = await createTenant(ctx.sql, { plan: "pro" });
    const { device: gone, numbers: goneNumbers } = await activeDevice(ctx, token);
    const goneSim = (await device(token, gone.id)).sim_cards[0].hosted_sim_id;
    expect((await ctx.request("DELETE", `/api/byos/devices/${gone.id}`, { token })).status).toBe(204);
    const [inactive] = await ctx.sql<{ status: string }[]>`select status from hosted_sims where id = ${goneSim}`;
    expect(inactive!.status).toBe("inactive");
    expect(await deliver(goneNumbers[0]!)).toEqual([]);

    const { device: d, numbers } = await activeDevice(ctx, token);
    const card = (await device(token, d.id)).sim_cards[0];
    const claim = await patchCard(token, d.id, card.id, { phone_number: goneNumbers[0] });
    expect(claim.status).toBe(200);
    await verificationSms(ctx, claim.body.data.verification_code, goneNumbers[0]!);
    expect((await device(token, d.id)).sim_cards[0]).toMatchObject({ phone_number: goneNumbers[0], hosted_sim_id: goneSim });
    const rows = await ctx.sql<
      { id: number; status: string }[]
    >`select id, status from hosted_sims where id in (${goneSim}, ${card.hosted_sim_id}) order by id`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({ [goneSim]: "active", [card.hosted_sim_id]: "inactive" });
    expect(await deliver(goneNumbers[0]!)).toEqual([org.id]);
    expect(await deliver(numbers[0]!)).toEqual([]);
  });

  test("another organization proving a number ends the lock the organization it takes the number from held: the SMS that follow are the new holder's alone", async () => {
    const a = await createTenant(ctx.sql, { plan: "pro" });
    const b = await createTenant(ctx.sql, { plan: "pro" });
    const { device: d, numbers } = await activeDevice(ctx, a.token);
    const number = numbers[0]!;
    const card = (await device(a.token, d.id)).sim_cards[0];
    const lock = await ctx.request("POST", `/api/numbers/${card.hosted_sim_id}/lock`, { token: a.token, body: { duration_seconds: 3600 } });
    expect(lock.status).toBe(200);
    expect((await ctx.request("POST", `/api/byos/devices/${d.id}/sims/${card.id}/deactivate`, { token: a.token })).status).toBe(200);

    const theirs = await registerDevice(ctx, b.token);
    expect((await verificationSms(ctx, theirs.sim_cards[0]!.verification_code, number)).status).toBe(200);
    const seen = await ctx.request("GET", `/api/numbers/${card.hosted_sim_id}`, { token: b.token });
    expect(seen.body.data).toMatchObject({ number, locked: false, lock: null });
    expect(await deliver(number)).toEqual([b.org.id]);
    const history = await ctx.sql<{ organization_id: number; release_reason: string; released: boolean }[]>`
      select organization_id, release_reason, released_at is not null as released from number_locks where hosted_sim_id = ${card.hosted_sim_id}`;
    expect([...history]).toEqual([{ organization_id: a.org.id, release_reason: "detached", released: true }]);
    expect((await ctx.request("POST", `/api/numbers/${card.hosted_sim_id}/lock`, { token: b.token, body: {} })).status).toBe(200);
  });
});
