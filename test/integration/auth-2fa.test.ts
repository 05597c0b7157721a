import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { addressKey } from "../../server/auth/limits";
import { saveTotpSecret } from "../../server/auth/store";
import { createTwoFactor } from "../../server/auth/two-factor";
import { createApiKey, createTenant, TEST_PASSWORD } from "../fixtures";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
// Each sign-in verifies an argon2id hash: on a busy machine a test of a dozen sign-ins needs more than the default 5 s.
const slowTest = (name: string, fn: () => Promise<void>) => test(name, fn, 30_000);
// Starting the embedded database can take a while on a busy machine.
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);
afterEach(async () => {
  await ctx.services.limiter.reset(addressKey("local"));
});

/** RFC 4648 base32 → bytes. */
function base32Decode(input: string): Buffer {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const ch of input.replace(/=+$/, "").toUpperCase()) bits += alphabet.indexOf(ch).toString(2).padStart(5, "0");
  const bytes: number[] = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(Number.parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

/** RFC 6238 TOTP (HMAC-SHA1, 30 s, 6 digits), computed here independently of the server's library. */
function totp(secret: string, stepOffset = 0, nowMs = Date.now()): string {
  const counter = Math.floor(nowMs / 1000 / 30) + stepOffset;
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const hmac = createHmac("sha1", base32Decode(secret)).update(msg).digest();
  const offset = hmac[hmac.length - 1]! & 0xf;
  const value = (hmac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return String(value).padStart(6, "0");
}

/** A code no nearby time step produces. */
function wrongCode(secret: string): string {
  const near = new Set([-1, 0, 1].map((o) => totp(secret, o)));
  let n = (Number(totp(secret)) + 1) % 1_000_000;
  while (near.has(String(n).padStart(6, "0"))) n = (n + 1) % 1_000_000;
  return String(n).padStart(6, "0");
}

const post = (path: string, opts: { token?: string; body?: unknown } = {}) => ctx.request("POST", path, opts);

// The server accepts each time step once; tests that need another code right away forget the last one.
const forgetLastStep = (userId: number) => ctx.sql`update users set totp_last_step = null where id = ${userId}`;

async function userWith2fa() {
  const tenant = await createTenant(ctx.sql);
  const setup = await post("/api/auth/2fa/setup", { token: tenant.token });
  expect(setup.status).toBe(200);
  const secret: string = setup.body.secret;
  const enabled = await post("/api/auth/2fa/enable", { token: tenant.token, body: { code: totp(secret) } });
  expect(enabled.status).toBe(200);
  await forgetLastStep(tenant.user.id);
  return { ...tenant, secret };
}

async function challenge(email: string): Promise<string> {
  const res = await post("/api/auth/login", { body: { email, password: TEST_PASSWORD } });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ "2fa_required": true, tmp_token: expect.any(String) });
  return res.body.tmp_token;
}

describe("two-factor authentication end to end", () => {
  slowTest("setup → enable with a code → login asks for 2FA → verify gives a working token", async () => {
    const { user, token } = await createTenant(ctx.sql);
    const setup = await post("/api/auth/2fa/setup", { token });
    expect(setup.status).toBe(200);
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    const url = new URL(setup.body.otpauth_url);
    expect(url.protocol).toBe("otpauth:");
    expect(url.host).toBe("totp");
    expect(url.searchParams.get("secret")).toBe(setup.body.secret);
    expect(url.searchParams.get("issuer")).toBe("simhost");

    // Set up but not enabled: login still answers a token.
    const plain = await post("/api/auth/login", { body: { email: user.email, password: TEST_PASSWORD } });
    expect(plain.body.token).toBeString();

    const bad = await post("/api/auth/2fa/enable", { token, body: { code: wrongCode(setup.body.secret) } });
    expect(bad.status).toBe(401);
    expectErrorShape(bad.body, "invalid_2fa_code");

    // The caller is cached from the requests above; the change must show at once, not after the cache's lifetime.
    expect((await ctx.request("GET", "/api/me", { token })).body.user.two_factor_enabled).toBe(false);
    const enabled = await post("/api/auth/2fa/enable", { token, body: { code: totp(setup.body.secret) } });
    expect(enabled.status).toBe(200);
    expect(enabled.body.data).toMatchObject({ id: user.id, two_factor_enabled: true });
    expect((await ctx.request("GET", "/api/me", { token })).body.user.two_factor_enabled).toBe(true);

    const tmp = await challenge(user.email);
    const stored = await ctx.sql`select token_hash from login_challenges where user_id = ${user.id}`;
    expect(stored.length).toBe(1);
    expect(Buffer.from(stored[0]!.token_hash).toString("latin1")).not.toContain(tmp);

    // The enable code's time step is spent; the next step's code is within the tolerated drift.
    const res = await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: totp(setup.body.secret, 1) } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: "Bearer", user: { id: user.id, two_factor_enabled: true } });
    expect(Date.parse(res.body.expires_at)).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    const me = await ctx.request("GET", "/api/me", { token: res.body.token });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.id);
  });

  slowTest("wrong code: 401 invalid_2fa_code and no token", async () => {
    const { user, secret } = await userWith2fa();
    const tmp = await challenge(user.email);
    const res = await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: wrongCode(secret) } });
    expect(res.status).toBe(401);
    expectErrorShape(res.body, "invalid_2fa_code");
  });

  slowTest("a tmp_token works once", async () => {
    const { user, secret } = await userWith2fa();
    const tmp = await challenge(user.email);
    expect((await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: totp(secret) } })).status).toBe(200);
    await forgetLastStep(user.id);
    const again = await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: totp(secret) } });
    expect(again.status).toBe(401);
    expectErrorShape(again.body, "invalid_2fa_code");
  });

  slowTest("a tmp_token from before a password change or revoke-others signs no one in after it", async () => {
    for (const end of ["password", "revoke-others"] as const) {
      const { user, secret, token } = await userWith2fa();
      const tmp = await challenge(user.email);
      const res =
        end === "password"
          ? await post("/api/auth/password", { token, body: { current_password: TEST_PASSWORD, new_password: "another password 1" } })
          : await post("/api/auth/sessions/revoke-others", { token });
      expect([end, res.status]).toEqual([end, 200]);
      const late = await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: totp(secret) } });
      expect([end, late.status]).toEqual([end, 401]);
      expectErrorShape(late.body, "invalid_2fa_code");
      const sessions = await ctx.sql`select id from sessions where user_id = ${user.id}`;
      expect([end, sessions.length]).toEqual([end, 1]);
    }
  });

  slowTest("a code works once: replaying it with a new tmp_token is refused", async () => {
    const { user, secret } = await userWith2fa();
    const code = totp(secret);
    expect((await post("/api/auth/2fa/verify", { body: { tmp_token: await challenge(user.email), code } })).status).toBe(200);
    const replay = await post("/api/auth/2fa/verify", { body: { tmp_token: await challenge(user.email), code } });
    expect(replay.status).toBe(401);
    expectErrorShape(replay.body, "invalid_2fa_code");
  });

  slowTest("a tmp_token expires after 5 minutes", async () => {
    const { user, secret } = await userWith2fa();
    const tmp = await challenge(user.email);
    const [row] = await ctx.sql<{ seconds: number }[]>`
      select extract(epoch from expires_at - created_at)::int as seconds from login_challenges where user_id = ${user.id}`;
    expect(row!.seconds).toBe(300);
    await ctx.sql`update login_challenges set expires_at = now() - interval '1 second' where user_id = ${user.id}`;
    const res = await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: totp(secret) } });
    expect(res.status).toBe(401);
    expectErrorShape(res.body, "invalid_2fa_code");
  });

  slowTest("5 wrong codes burn the tmp_token: the right code fails afterwards", async () => {
    const { user, secret } = await userWith2fa();
    const tmp = await challenge(user.email);
    for (let i = 0; i < 5; i++) {
      expect((await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: wrongCode(secret) } })).status).toBe(401);
    }
    const res = await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: totp(secret) } });
    expect(res.status).toBe(401);
    await ctx.services.limiter.reset(addressKey("local"));
    // 4 wrong codes leave it usable.
    const tmp2 = await challenge(user.email);
    for (let i = 0; i < 4; i++) await post("/api/auth/2fa/verify", { body: { tmp_token: tmp2, code: wrongCode(secret) } });
    expect((await post("/api/auth/2fa/verify", { body: { tmp_token: tmp2, code: totp(secret) } })).status).toBe(200);
  });

  slowTest("disable needs a current code; afterwards login answers a token directly", async () => {
    const { user, token, secret } = await userWith2fa();
    const bad = await post("/api/auth/2fa/disable", { token, body: { code: wrongCode(secret) } });
    expect(bad.status).toBe(401);
    expectErrorShape(bad.body, "invalid_2fa_code");
    const res = await post("/api/auth/2fa/disable", { token, body: { code: totp(secret) } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: user.id, two_factor_enabled: false });
    const login = await post("/api/auth/login", { body: { email: user.email, password: TEST_PASSWORD } });
    expect(login.status).toBe(200);
    expect(login.body.token).toBeString();
    expect(login.body["2fa_required"]).toBeUndefined();
  });

  slowTest("state errors: setup while enabled, enable before setup or twice, disable while off → 409 invalid_state", async () => {
    const fresh = await createTenant(ctx.sql);
    expectErrorShape((await post("/api/auth/2fa/enable", { token: fresh.token, body: { code: "123456" } })).body, "invalid_state");
    expectErrorShape((await post("/api/auth/2fa/disable", { token: fresh.token, body: { code: "123456" } })).body, "invalid_state");
    const on = await userWith2fa();
    const setup = await post("/api/auth/2fa/setup", { token: on.token });
    expect(setup.status).toBe(409);
    expectErrorShape(setup.body, "invalid_state");
    const twice = await post("/api/auth/2fa/enable", { token: on.token, body: { code: totp(on.secret) } });
    expect(twice.status).toBe(409);
  });

  slowTest("wrong codes add up across tmp_tokens: after 10 in all, even the password login answers 429", async () => {
    const { user, secret } = await userWith2fa();
    for (let round = 0; round < 2; round++) {
      const tmp = await challenge(user.email);
      for (let i = 0; i < 5; i++) expect((await post("/api/auth/2fa/verify", { body: { tmp_token: tmp, code: wrongCode(secret) } })).status).toBe(401);
      await ctx.services.limiter.reset(addressKey("local"));
    }
    const res = await post("/api/auth/login", { body: { email: user.email, password: TEST_PASSWORD } });
    expect(res.status).toBe(429);
    expectErrorShape(res.body, "rate_limited");
  });

  slowTest("wrong codes on enable are limited per user: 429 after 10", async () => {
    const { token } = await createTenant(ctx.sql);
    const { body } = await post("/api/auth/2fa/setup", { token });
    for (let i = 0; i < 10; i++) expect((await post("/api/auth/2fa/enable", { token, body: { code: wrongCode(body.secret) } })).status).toBe(401);
    const res = await post("/api/auth/2fa/enable", { token, body: { code: totp(body.secret) } });
    expect(res.status).toBe(429);
    expectErrorShape(res.body, "rate_limited");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("a setup landing while an enable checks its code", () => {
  test("the enable is refused (409), 2FA stays off: it would have turned on with a secret the user never saw", async () => {
    const { user, token } = await createTenant(ctx.sql);
    const first: string = (await post("/api/auth/2fa/setup", { token })).body.secret;
    // The second setup's write lands between the code's check and the switch (the enable's transaction).
    const second = "JBSWY3DPEHPK3PXP";
    const { change } = ctx.services.auth;
    const twoFactor = createTwoFactor({
      sql: ctx.sql,
      limiter: ctx.services.limiter,
      clock: ctx.services.clock,
      credentials: {
        change: (async (fn: never) => {
          await saveTotpSecret(ctx.sql, user.id, second);
          return change(fn);
        }) as typeof change,
      },
    });
    const refused = await twoFactor.enable(user.id, totp(first)).catch((e) => e);
    expect(refused).toMatchObject({ status: 409, code: "invalid_state" });
    const [row] = await ctx.sql<{ totp_enabled: boolean; totp_secret: string }[]>`select totp_enabled, totp_secret from users where id = ${user.id}`;
    expect(row).toEqual({ totp_enabled: false, totp_secret: second });
  });
});

describe("two-factor validation and auth", () => {
  slowTest("code must be 6 digits as a string; tmp_token is required", async () => {
    const { token } = await createTenant(ctx.sql);
    for (const code of ["12345", "1234567", "abcdef", "", 123456, null]) {
      for (const path of ["/api/auth/2fa/enable", "/api/auth/2fa/disable"]) {
        const res = await post(path, { token, body: { code } });
        expect(res.status).toBe(422);
        expect(expectErrorShape(res.body, "validation_failed").errors.code).toBeArray();
      }
      const v = await post("/api/auth/2fa/verify", { body: { tmp_token: "tt_x", code } });
      expect(v.status).toBe(422);
      expect(v.body.errors.code).toBeArray();
    }
    for (const body of [{ code: "123456" }, { tmp_token: "", code: "123456" }, { tmp_token: "x".repeat(201), code: "123456" }]) {
      const res = await post("/api/auth/2fa/verify", { body });
      expect(res.status).toBe(422);
      expect(res.body.errors.tmp_token).toBeArray();
    }
  });

  slowTest("an unknown tmp_token: 401 invalid_2fa_code", async () => {
    const res = await post("/api/auth/2fa/verify", { body: { tmp_token: "tt_unknown", code: "123456" } });
    expect(res.status).toBe(401);
    expectErrorShape(res.body, "invalid_2fa_code");
  });

  slowTest("setup, enable, disable: no token or a bad token → 401, an API key → 403 api_key_not_allowed", async () => {
    const { org } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"]);
    for (const path of ["/api/auth/2fa/setup", "/api/auth/2fa/enable", "/api/auth/2fa/disable"]) {
      const body = { code: "123456" };
      expectErrorShape((await post(path, { body })).body, "unauthenticated");
      expect((await post(path, { body, token: "st_bad" })).status).toBe(401);
      const res = await post(path, { body, token: key.key });
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "api_key_not_allowed");
    }
  });
});
