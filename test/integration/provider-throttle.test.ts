import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CODE_ALPHABET } from "../../server/devices/codes";
import { randomString } from "../../server/lib/crypto";
import { createFakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { activeDevice, clockedContext, randomSimNumber, registerDevice, verificationSms } from "../fixtures-devices";
import { sharedTestContext, type TestContext } from "../helpers";

// Issue 14 defect 8: wrong verification codes are throttled per sender number and per device,
// on every instance (docs/api-notes.md "Verification codes cannot be guessed").

let ctx: TestContext;
let second: Awaited<ReturnType<typeof clockedContext>>;
beforeAll(async () => {
  ctx = await sharedTestContext();
  second = await clockedContext(ctx, ctx.services.clock);
});
afterAll(() => second.close());

type Instance = Pick<TestContext, "request" | "config" | "sql">;

/** `n` codes of the right shape that no SIM card holds now. */
async function wrongCodes(n: number): Promise<string[]> {
  const live = new Set(
    (await ctx.sql<{ code: string }[]>`select verification_code as code from sim_cards where verification_code is not null`).map((r) => r.code),
  );
  const codes = new Set<string>();
  while (codes.size < n) {
    const code = `SIM-${randomString(4, CODE_ALPHABET)}`;
    if (!live.has(code)) codes.add(code);
  }
  return [...codes];
}

const status = (c: Instance, token: string, id: number) => c.request("GET", `/api/byos/devices/${id}`, { token }).then((r) => r.body.data);

/** The verification outcomes both instances counted (simhost_verification_codes_total). */
async function outcomes(): Promise<Record<string, number>> {
  const sum: Record<string, number> = {};
  for (const services of [ctx.services, second.services]) {
    const metric = services.metrics.registry.getSingleMetric("simhost_verification_codes_total");
    for (const v of (await metric?.get())?.values ?? []) sum[String(v.labels.outcome)] = (sum[String(v.labels.outcome)] ?? 0) + v.value;
  }
  return sum;
}

describe("per sender", () => {
  test("300 wrong codes from one sender, spread over two instances, then the right one: it does not verify; only 5 were judged", async () => {
    const { token } = await createTenant(ctx.sql);
    const pending = await registerDevice(ctx, token);
    const sender = randomSimNumber();
    const before = await outcomes();
    const answers = await Promise.all((await wrongCodes(300)).map((code, i) => verificationSms(i % 2 ? second : ctx, code, sender)));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect((await verificationSms(ctx, pending.sim_cards[0]!.verification_code, sender)).status).toBe(200);
    expect(await status(ctx, token, pending.id)).toMatchObject({ status: "pending_verification", phone_number: null });
    const after = await outcomes();
    expect((after.unknown_code ?? 0) - (before.unknown_code ?? 0)).toBe(5);
    expect((after.throttled ?? 0) - (before.throttled ?? 0)).toBe(296);
    expect(after.verified ?? 0).toBe(before.verified ?? 0);
  });

  test("a legitimate sender with one typo still verifies; other senders are not held back by someone else's guesses", async () => {
    const { token } = await createTenant(ctx.sql);
    const pending = await registerDevice(ctx, token);
    const guesser = randomSimNumber();
    for (const code of await wrongCodes(10)) await verificationSms(second, code, guesser);
    const [typo] = await wrongCodes(1);
    const number = randomSimNumber();
    await verificationSms(ctx, typo!, number);
    await verificationSms(second, pending.sim_cards[0]!.verification_code, number);
    expect(await status(ctx, token, pending.id)).toMatchObject({ status: "active", phone_number: number });
  });

  describe("with a fake clock", () => {
    const clock = createFakeClock(Date.now());
    let clocked: Awaited<ReturnType<typeof clockedContext>>;
    beforeAll(async () => {
      clocked = await clockedContext(ctx, clock);
    });
    afterAll(() => clocked.close());

    test("a sender over the limit is ignored for 15 minutes from its first ignored code, then verifies again", async () => {
      const { token } = await createTenant(ctx.sql);
      const pending = await registerDevice(clocked, token);
      const card = pending.sim_cards[0]!;
      const sender = randomSimNumber();
      for (const code of await wrongCodes(5)) await verificationSms(clocked, code, sender);
      clock.advance(60_000);
      await verificationSms(clocked, card.verification_code, sender); // the 6th: ignored, the lockout starts now
      clock.advance(14 * 60_000);
      const reissued = await clocked.request("POST", `/api/byos/devices/${pending.id}/sims/${card.id}/reissue-code`, { token });
      await verificationSms(clocked, reissued.body.data.verification_code, sender);
      expect((await status(clocked, token, pending.id)).status).toBe("pending_verification");
      clock.advance(60_000 + 1);
      await verificationSms(clocked, reissued.body.data.verification_code, sender);
      expect(await status(clocked, token, pending.id)).toMatchObject({ status: "active", phone_number: sender });
    });

    test("a patient sender gets 20 wrong codes a day: five every 16 minutes, then even the right code waits a day", async () => {
      const { token } = await createTenant(ctx.sql);
      const pending = await registerDevice(clocked, token);
      const card = pending.sim_cards[0]!;
      const sender = randomSimNumber();
      for (let round = 0; round < 4; round++) {
        for (const code of await wrongCodes(5)) await verificationSms(clocked, code, sender);
        clock.advance(16 * 60_000);
      }
      const reissue = () => clocked.request("POST", `/api/byos/devices/${pending.id}/sims/${card.id}/reissue-code`, { token });
      await verificationSms(clocked, (await reissue()).body.data.verification_code, sender);
      expect((await status(clocked, token, pending.id)).status).toBe("pending_verification");
      clock.advance(24 * 60 * 60_000 + 1);
      await verificationSms(clocked, (await reissue()).body.data.verification_code, sender);
      expect(await status(clocked, token, pending.id)).toMatchObject({ status: "active", phone_number: sender });
    });
  });
});

describe("per device", () => {
  test("wrong codes from a device's own number count against the device: its other card's right code is then ignored", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device, numbers } = await activeDevice(ctx, token);
    const added = await ctx.request("POST", `/api/byos/devices/${device.id}/sims`, { token, body: { sim_slot: 2 } });
    for (const code of await wrongCodes(5)) await verificationSms(second, code, numbers[0]!);
    await verificationSms(ctx, added.body.data.verification_code, randomSimNumber());
    const shown = await status(ctx, token, device.id);
    expect(shown.sim_cards.find((c: { id: number }) => c.id === added.body.data.id).status).toBe("pending");
  });

  test("a claim's code sent from five other numbers blocks the device: the claimed number's SMS is then ignored too", async () => {
    const { token } = await createTenant(ctx.sql);
    const { device, numbers } = await activeDevice(ctx, token);
    const card = (await status(ctx, token, device.id)).sim_cards[0];
    const fresh = randomSimNumber();
    const claim = await ctx.request("PATCH", `/api/byos/devices/${device.id}/sims/${card.id}`, { token, body: { phone_number: fresh } });
    expect(claim.status).toBe(200);
    for (let i = 0; i < 5; i++) await verificationSms(i % 2 ? second : ctx, claim.body.data.verification_code, randomSimNumber());
    await verificationSms(ctx, claim.body.data.verification_code, fresh);
    expect((await status(ctx, token, device.id)).sim_cards[0]).toMatchObject({ phone_number: numbers[0], pending_phone_number: fresh });
  });
});
