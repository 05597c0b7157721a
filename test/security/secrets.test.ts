import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { systemClock } from "../../server/lib/clock";
import { createLogger } from "../../server/lib/logger";
import { signChannel } from "../../server/realtime/protocol";
import { createApiKey, createTenant } from "../fixtures";
import { clockedContext, providerPost, registerDevice, smsBody } from "../fixtures-devices";
import { createTestContext, type TestContext } from "../helpers";
import { cookieFrom, createOAuthClient, hiddenInputs, totpCode } from "../integration/oauth-flow";
import { startReceiver } from "../integration/webhooks-helpers";

/**
 * Secrets and tokens never appear in logs or error bodies (issue 9, item 4): the app runs with a
 * logger at trace level writing into memory; every flow that hands out or takes a secret runs,
 * then the captured log and every non-2xx body are searched for each secret in plain text.
 */
const lines: string[] = [];
let ctx: Awaited<ReturnType<typeof clockedContext>>;
const secrets = new Map<string, string>();
const errorBodies: string[] = [];
const remember = (what: string, value: unknown) => {
  if (typeof value !== "string" || value.length < 6) throw new Error(`no ${what} to remember: ${String(value)}`);
  secrets.set(value, what);
};

let base: TestContext;
beforeAll(async () => {
  // Its own database: the SMS and verification jobs it queues stay out of the shared queue.
  base = await createTestContext();
  const logger = createLogger("trace", { write: (line: string) => void lines.push(line) });
  ctx = await clockedContext(base, systemClock, {}, { logger });
  remember("provider auth token", ctx.config.PROVIDER_AUTH_TOKEN);
  remember("pusher app secret", ctx.services.realtime.credentials.secret);
}, 60_000);

afterAll(async () => {
  await ctx.close();
  await base.close();
});

async function call(method: string, path: string, opts: Parameters<typeof ctx.request>[2] = {}) {
  const res = await ctx.request(method, path, opts);
  if (res.status >= 400) errorBodies.push(`${method} ${path} → ${res.status} ${res.text}`);
  return res;
}

describe("secrets in logs and error bodies", () => {
  test("sign-in, 2FA, API keys, webhooks, OAuth, provider callbacks and failures leave no secret behind", async () => {
    const password = `pw-${crypto.randomUUID()}`;
    const tenant = await createTenant(ctx.sql, { plan: "pro" });
    await ctx.sql`update users set password_hash = ${await Bun.password.hash(password, { algorithm: "argon2id" })} where id = ${tenant.user.id}`;
    remember("password", password);
    remember("fixture session token", tenant.token);

    // Sign-in: right and wrong password, a password in a malformed body, a garbage token.
    const login = await call("POST", "/api/auth/login", { body: { email: tenant.user.email, password } });
    remember("session token", login.body.token);
    await call("POST", "/api/auth/login", { body: { email: tenant.user.email, password: `${password}-wrong` } });
    remember("wrong password", `${password}-wrong`);
    const malformed = await ctx.app.handle(
      new Request("http://localhost:3000/api/auth/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"email":"${tenant.user.email}","password":"${password}-malformed"`,
      }),
    );
    expect(malformed.status).toBe(400);
    errorBodies.push(`POST /api/auth/login → 400 ${await malformed.text()}`);
    remember("password in a malformed body", `${password}-malformed`);
    await call("POST", "/api/auth/login", { body: { email: tenant.user.email, password: `${password}-too-long-${"x".repeat(1100)}` } });
    await call("GET", "/api/me", { token: `st_${"Q".repeat(40)}-garbage-token` });
    remember("garbage token", `st_${"Q".repeat(40)}-garbage-token`);

    // 2FA: setup, a wrong code, enable, a challenge, a wrong code on it, the right one.
    const setup = await call("POST", "/api/auth/2fa/setup", { token: login.body.token });
    remember("totp secret", setup.body.secret);
    await call("POST", "/api/auth/2fa/enable", { token: login.body.token, body: { code: "000000" } });
    expect((await call("POST", "/api/auth/2fa/enable", { token: login.body.token, body: { code: totpCode(setup.body.secret) } })).status).toBe(200);
    await ctx.sql`update users set totp_last_step = null where id = ${tenant.user.id}`;
    const challenge = await call("POST", "/api/auth/login", { body: { email: tenant.user.email, password } });
    remember("tmp_token", challenge.body.tmp_token);
    await call("POST", "/api/auth/2fa/verify", { body: { tmp_token: challenge.body.tmp_token, code: "000000" } });
    const verified = await call("POST", "/api/auth/2fa/verify", { body: { tmp_token: challenge.body.tmp_token, code: totpCode(setup.body.secret) } });
    expect(verified.status).toBe(200);
    remember("2fa session token", verified.body.token);
    await call("POST", "/api/auth/2fa/verify", { body: { tmp_token: challenge.body.tmp_token, code: totpCode(setup.body.secret) } });
    const token = verified.body.token as string;

    // API keys: create, regenerate, use; the old key refused afterwards.
    const key = await call("POST", "/api/api-keys", { token, body: { name: "secret test", permissions: ["numbers.read"] } });
    remember("api key", key.body.plain_text_key);
    const regenerated = await call("POST", `/api/api-keys/${key.body.api_key.id}/regenerate`, { token });
    remember("regenerated api key", regenerated.body.plain_text_key);
    await call("GET", "/api/numbers", { token: regenerated.body.plain_text_key });
    await call("GET", "/api/numbers", { token: key.body.plain_text_key });
    await call("POST", "/api/teams", { token: regenerated.body.plain_text_key, body: { name: "denied" } });

    // Webhooks: create, regenerate, a synchronous test event to a receiver that fails, custom headers.
    const receiver = startReceiver((n) => new Response("nope", { status: n === 1 ? 500 : 200 }));
    const hook = await call("POST", "/api/webhook-integrations", {
      token,
      body: { name: "secret hook", url: receiver.url, headers: { "x-custom-auth": "custom-header-secret-value" } },
    });
    remember("whsec", hook.body.data.secret);
    remember("custom header value", "custom-header-secret-value");
    const regenHook = await call("POST", `/api/webhook-integrations/${hook.body.data.id}/regenerate-secret`, { token });
    remember("regenerated whsec", regenHook.body.data.secret);
    await call("POST", `/api/webhook-integrations/${hook.body.data.id}/test`, { token });
    await call("POST", `/api/webhook-integrations/${hook.body.data.id}/test`, { token });
    receiver.stop();

    // Provider callbacks: verification, a wrong signature, an unknown number.
    const device = await registerDevice(ctx, token);
    const fields = {
      From: "+18005550100",
      To: ctx.config.PROVIDER_NUMBER,
      Body: `Verify ${device.sim_cards[0]!.verification_code}`,
      MessageSid: "SMsecret1",
      AccountSid: "AC1",
    };
    await call("POST", "/api/provider/sms", { form: fields, headers: { "x-provider-signature": "AAAAAAAAAAAAAAAAAAAAAAAAAAA=" } });
    expect((await providerPost(ctx, fields)).status).toBe(200);
    await providerPost(ctx, { ...fields, To: "+18005550199", MessageSid: "SMsecret2" });
    await call("POST", `/api/byos/devices/${device.id}/sms`, { token, body: smsBody() });

    // Realtime: a channel auth answer and a refused one.
    const own = await call("POST", "/api/broadcasting/auth", { token, body: { socket_id: "123.456", channel_name: `private-organization.${tenant.org.id}` } });
    expect(own.body.auth).toBe(
      signChannel(ctx.services.realtime.credentials.key, ctx.services.realtime.credentials.secret, "123.456", `private-organization.${tenant.org.id}`),
    );
    await call("POST", "/api/broadcasting/auth", { token, body: { socket_id: "123.456", channel_name: "private-organization.999999999" } });

    // OAuth: page sign-in, code exchange, refresh, a replayed code, revocation.
    const client = await createOAuthClient(ctx.sql);
    const verifier = `v${crypto.randomUUID()}${crypto.randomUUID()}`;
    const challengeS256 = createHash("sha256").update(verifier).digest("base64url");
    const query = new URLSearchParams({
      response_type: "code",
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      code_challenge: challengeS256,
      code_challenge_method: "S256",
      state: "st8",
    });
    await ctx.sql`update users set totp_last_step = null where id = ${tenant.user.id}`;
    const page = await call("GET", `/oauth/authorize?${query}`);
    const cookie = cookieFrom(page.headers);
    const post = (form: Record<string, string>) => call("POST", "/oauth/authorize", { form, headers: { cookie } });
    let step = await post({ ...hiddenInputs(page.text), email: tenant.user.email, password });
    step = await post({ ...hiddenInputs(step.text), code: totpCode(setup.body.secret) });
    step = await post({ ...hiddenInputs(step.text), decision: "approve" });
    const code = new URL(step.headers.get("location")!).searchParams.get("code");
    remember("authorization code", code);
    const exchange = { grant_type: "authorization_code", code: code!, redirect_uri: client.redirectUri, client_id: client.clientId, code_verifier: verifier };
    const tokens = await call("POST", "/oauth/token", { form: exchange });
    remember("oauth access token", tokens.body.access_token);
    remember("oauth refresh token", tokens.body.refresh_token);
    remember("pkce verifier", verifier);
    const refreshed = await call("POST", "/oauth/token", {
      form: { grant_type: "refresh_token", refresh_token: tokens.body.refresh_token, client_id: client.clientId },
    });
    remember("rotated refresh token", refreshed.body.refresh_token);
    await call("POST", "/oauth/token", { form: exchange });
    await call("POST", "/oauth/token", { form: { grant_type: "refresh_token", refresh_token: tokens.body.refresh_token, client_id: client.clientId } });
    await call("POST", "/oauth/revoke", { form: { token: refreshed.body.access_token ?? tokens.body.access_token, client_id: client.clientId } });

    await call("POST", "/api/auth/logout", { token });
    await call("GET", "/api/me", { token });
    const otherKey = await createApiKey(ctx.sql, tenant.org.id, []);
    remember("fixture api key", otherKey.key);
    await call("GET", "/api/numbers", { token: otherKey.key });

    // Something was logged and some answers failed, or the scan proves nothing.
    expect(lines.length).toBeGreaterThan(20);
    expect(errorBodies.length).toBeGreaterThan(10);
    const found: string[] = [];
    const log = lines.join("");
    if (process.env.SECURITY_DUMP) await Bun.write(process.env.SECURITY_DUMP, `${log}\n${errorBodies.join("\n")}`);
    for (const [value, what] of secrets) {
      if (log.includes(value)) found.push(`log holds the ${what}`);
      for (const body of errorBodies) if (body.includes(value)) found.push(`error body holds the ${what}: ${body.slice(0, 200)}`);
    }
    expect(found).toEqual([]);
    // Nor stack traces or SQL in any error body (API.md §1).
    expect(errorBodies.filter((b) => /\.ts:\d+|\bat \w+ \(|\b(select|insert into|update \w+ set)\b/i.test(b))).toEqual([]);
  }, 60_000);
});
