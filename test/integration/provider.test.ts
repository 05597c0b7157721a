import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import twilio from "twilio";
import { providerSignature } from "../../server/provider/signature";
import { createFakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { clockedContext, providerPost, randomSimNumber, registerDevice, verificationSms } from "../fixtures-devices";
import { createPoolNumber, holdLocks, lockWaiters } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

const sid = () => `SM${crypto.randomUUID().replaceAll("-", "")}`;
const fields = (over: Record<string, string> = {}) => ({ From: "+15551230000", To: "+15005550006", Body: "hi", MessageSid: sid(), AccountSid: "AC1", ...over });

describe("X-Provider-Signature", () => {
  test("agrees with the reference algorithm (twilio getExpectedTwilioSignature)", () => {
    const cases: [string, string, Record<string, string>][] = [
      ["tok-123456", "https://example.test/api/provider/sms", fields()],
      ["another-token", "http://localhost:3000/api/provider/sms?x=1", fields({ Body: "Grüße SIM-AB23 ✓", NumMedia: "0", Zeta: "", aLower: "a" })],
      ["t0k3n-long-enough", "https://h/api/provider/sms", {}],
    ];
    for (const [token, url, params] of cases) {
      expect(providerSignature(token, url, params)).toBe(twilio.getExpectedTwilioSignature(token, url, params));
      expect(twilio.validateRequest(token, providerSignature(token, url, params), url, params)).toBe(true);
    }
  });

  test("valid signature accepted; tampered field, URL or token, or none at all: 403 invalid_signature", async () => {
    const f = fields({ To: "+19999999999" });
    const url = `${ctx.config.PUBLIC_URL}/api/provider/sms`;
    const good = providerSignature(ctx.config.PROVIDER_AUTH_TOKEN, url, f);
    expect((await providerPost(ctx, f, { signature: good })).status).toBe(200);
    const tamperedField = await providerPost(ctx, { ...f, Body: "changed" }, { signature: good });
    expect(tamperedField.status).toBe(403);
    expectErrorShape(tamperedField.body, "invalid_signature");
    const wrongUrl = providerSignature(ctx.config.PROVIDER_AUTH_TOKEN, "http://evil.test/api/provider/sms", f);
    expect((await providerPost(ctx, f, { signature: wrongUrl })).status).toBe(403);
    expect((await providerPost(ctx, f, { token: "not-the-token" })).status).toBe(403);
    const none = await ctx.request("POST", "/api/provider/sms", { form: f });
    expect(none.status).toBe(403);
    expectErrorShape(none.body, "invalid_signature");
  });

  test("signed but missing fields: 422", async () => {
    const res = await providerPost(ctx, { From: "+15551230000", Body: "x" });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors).sort()).toEqual(["MessageSid", "To"]);
  });

  test("signed with a message id or an address past its bound: 422 naming it, never 500 (they key the rows the callback writes)", async () => {
    const long = "A".repeat(2800);
    for (const [over, field] of [
      [{ MessageSid: long }, "MessageSid"],
      [{ MessageSid: "SM-1" }, "MessageSid"],
      [{ From: `+1${"5".repeat(2800)}` }, "From"],
      [{ From: `+1${"5".repeat(2800)}`, To: "+15005550006", Body: "Verify SIM-ABCD" }, "From"],
      [{ To: long }, "To"],
    ] as const) {
      const res = await providerPost(ctx, fields(over));
      expect([field, res.status]).toEqual([field, 422]);
      expect(Object.keys(expectErrorShape(res.body, "validation_failed").errors)).toEqual([field]);
    }
  });
});

describe("inbound SMS to pool numbers", () => {
  test("stored with source provider; a repeated MessageSid is a no-op", async () => {
    const pool = await createPoolNumber(ctx.sql);
    const f = fields({ To: pool.number, Body: "pool hello" });
    expect((await providerPost(ctx, f)).text).toBe("<Response/>");
    expect((await providerPost(ctx, f)).status).toBe(200);
    const rows = await ctx.sql<
      { source: string; external_id: string; text: string }[]
    >`select source, external_id, text from messages where hosted_sim_id = ${pool.id}`;
    expect([...rows]).toEqual([{ source: "provider", external_id: f.MessageSid, text: "pool hello" }]);
  });

  test("a callback to a versioned path is signed over the URL the provider called, /api/v1/... included", async () => {
    const pool = await createPoolNumber(ctx.sql);
    for (const path of ["/api/v1/provider/sms", "/api/v2/provider/sms"]) {
      const f = fields({ To: pool.number, Body: `via ${path}` });
      expect((await providerPost(ctx, f, { path })).status).toBe(200);
      // Signed over the path it is handled under, not the one called: refused.
      const unversioned = providerSignature(ctx.config.PROVIDER_AUTH_TOKEN, `${ctx.config.PUBLIC_URL}/api/provider/sms`, f);
      expect((await providerPost(ctx, { ...f, MessageSid: sid() }, { path, signature: unversioned })).status).toBe(403);
    }
    const stored = await ctx.sql<{ text: string }[]>`select text from messages where hosted_sim_id = ${pool.id} order by id`;
    expect(stored.map((r) => r.text)).toEqual(["via /api/v1/provider/sms", "via /api/v2/provider/sms"]);
  });

  test("a NUL in the text or the sender is stored as U+FFFD, not refused (the provider would send the SMS again and again)", async () => {
    const pool = await createPoolNumber(ctx.sql);
    const f = fields({ To: pool.number, From: "Bank\u0000", Body: "code\u00001234" });
    const res = await providerPost(ctx, f);
    expect(res.status).toBe(200);
    const rows = await ctx.sql<{ from_number: string; text: string }[]>`select from_number, text from messages where hosted_sim_id = ${pool.id}`;
    expect([...rows]).toEqual([{ from_number: "Bank\uFFFD", text: "code\uFFFD1234" }]);
  });

  test("an SMS to a number nobody hosts is accepted and dropped", async () => {
    const res = await providerPost(ctx, fields({ To: randomSimNumber() }));
    expect(res.status).toBe(200);
    expect(res.text).toBe("<Response/>");
  });
});

describe("SIM verification", () => {
  test("a number already active on another device is refused; the card stays pending", async () => {
    const { token } = await createTenant(ctx.sql);
    const number = randomSimNumber();
    const first = await registerDevice(ctx, token);
    await verificationSms(ctx, first.sim_cards[0]!.verification_code, number);
    const other = await createTenant(ctx.sql);
    const second = await registerDevice(ctx, other.token);
    expect((await verificationSms(ctx, second.sim_cards[0]!.verification_code, number)).status).toBe(200);
    const shown = await ctx.request("GET", `/api/byos/devices/${second.id}`, { token: other.token });
    expect(shown.body.data.status).toBe("pending_verification");
    expect(shown.body.data.sim_cards[0].status).toBe("pending");
  });

  test("reissue replaces the code: the old one stops working; active cards refuse with 409 sim_already_active", async () => {
    const { token } = await createTenant(ctx.sql);
    const device = await registerDevice(ctx, token);
    const card = device.sim_cards[0]!;
    const res = await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/reissue-code`, { token });
    expect(res.status).toBe(200);
    expect(res.body.data.verification_code).not.toBe(card.verification_code);
    expect(res.body.data).toMatchObject({ id: card.id, status: "pending", phone_number: null, provider_number: ctx.config.PROVIDER_NUMBER });
    await verificationSms(ctx, card.verification_code, randomSimNumber());
    expect((await ctx.request("GET", `/api/byos/devices/${device.id}`, { token })).body.data.status).toBe("pending_verification");
    await verificationSms(ctx, res.body.data.verification_code, randomSimNumber());
    expect((await ctx.request("GET", `/api/byos/devices/${device.id}`, { token })).body.data.status).toBe("active");
    const again = await ctx.request("POST", `/api/byos/devices/${device.id}/sims/${card.id}/reissue-code`, { token });
    expect(again.status).toBe(409);
    expectErrorShape(again.body, "sim_already_active");
  });

  describe("with a fake clock", () => {
    const clock = createFakeClock(Date.now());
    let clocked: Awaited<ReturnType<typeof clockedContext>>;
    beforeAll(async () => {
      clocked = await clockedContext(ctx, clock);
    });
    afterAll(() => clocked.close());

    test("a code expires 5 minutes after issue and then does nothing", async () => {
      const { token } = await createTenant(ctx.sql);
      const late = await registerDevice(clocked, token);
      const inTime = await registerDevice(clocked, token);
      clock.advance(5 * 60 * 1000 - 1000);
      await verificationSms(clocked, inTime.sim_cards[0]!.verification_code, randomSimNumber());
      clock.advance(1000);
      await verificationSms(clocked, late.sim_cards[0]!.verification_code, randomSimNumber());
      expect((await clocked.request("GET", `/api/byos/devices/${late.id}`, { token })).body.data.status).toBe("pending_verification");
      expect((await clocked.request("GET", `/api/byos/devices/${inTime.id}`, { token })).body.data.status).toBe("active");
    });
  });
});

describe("concurrent verifications", () => {
  test("two devices verifying the same number at once: one wins, no server error", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const [da, db] = await Promise.all([registerDevice(ctx, a.token), registerDevice(ctx, b.token)]);
    const number = randomSimNumber();
    const answers = await Promise.all([
      verificationSms(ctx, da.sim_cards[0]!.verification_code, number),
      verificationSms(ctx, db.sim_cards[0]!.verification_code, number),
    ]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from sim_cards where phone_number = ${number} and status = 'active'`;
    expect(row!.n).toBe(1);
  });
});

// PostgreSQL only: another session holds the device's row (as a revocation on another instance
// does first), then asks for the card's.
test.skipIf(!process.env.DATABASE_URL)(
  "a verification takes the device's row before its card's, as device operations do: no deadlock with one on another instance, no 500",
  async () => {
    const t = await createTenant(ctx.sql);
    const device = await registerDevice(ctx, t.token);
    const card = device.sim_cards[0]!;
    let takeCard!: () => void;
    const cardWanted = new Promise<void>((resolve) => (takeCard = resolve));
    const release = await holdLocks(ctx.sql, async (tx) => {
      await tx`select 1 from devices where id = ${device.id} for update`;
      // Once the verification waits, this session asks for the card: in the old order the
      // verification held it and waited for the device (a deadlock: one of the two failed).
      void cardWanted.then(() => tx`select 1 from sim_cards where id = ${card.id} for update`).catch(() => {});
    });
    const verified = verificationSms(ctx, card.verification_code, randomSimNumber());
    await lockWaiters(ctx.sql, 1);
    takeCard();
    await release();
    expect((await verified).status).toBe(200);
    const [row] = await ctx.sql<{ status: string }[]>`select status from sim_cards where id = ${card.id}`;
    expect(row!.status).toBe("active");
  },
  30_000,
);
