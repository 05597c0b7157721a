import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { addressKey } from "../../server/auth/limits";
import { createTenant } from "../fixtures";
import { sharedTestContext, type TestContext } from "../helpers";
import { cookieFrom, createOAuthClient, enableTotp, hiddenInputs, TEST_TOTP_SECRET, totpCode } from "./oauth-flow";

/** GET/POST /oauth/authorize: request validation (RFC 6749 4.1.2.1), the page's steps, CSRF. */
let ctx: TestContext;
// Generous: the first file to ask starts the embedded database and migrates it, on a busy machine.
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);
// In-process requests share one client address; the API login tests count failures on it too.
afterEach(async () => {
  await ctx.services.limiter.reset(addressKey("local"));
});

const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"; // RFC 7636 appendix B

async function setup() {
  const tenant = await createTenant(ctx.sql);
  const client = await createOAuthClient(ctx.sql);
  const params = (overrides: Record<string, string | null> = {}) => {
    const q: Record<string, string | null> = {
      response_type: "code",
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      code_challenge: CHALLENGE,
      code_challenge_method: "S256",
      state: "xyz",
      ...overrides,
    };
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== null) p.set(k, v);
    return `/oauth/authorize?${p}`;
  };
  return { ...tenant, client, params };
}

function redirectParams(res: { status: number; headers: Headers }, redirectUri: string) {
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get("location")!);
  expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
  return location.searchParams;
}

describe("GET /oauth/authorize", () => {
  test("serves the sign-in page: labelled fields, CSRF cookie and token, no framing, no caching", async () => {
    const { params } = await setup();
    const res = await ctx.request("GET", params());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("set-cookie")).toMatch(/^simhost_oauth_csrf=\w+; Path=\/oauth; HttpOnly; SameSite=Lax/);
    expect(res.text).toContain('<label for="email">Email</label>');
    expect(res.text).toContain('<label for="password">Password</label>');
    expect(res.text).toContain("simhost browser extension");
    const hidden = hiddenInputs(res.text);
    expect(hidden.csrf).toBeTruthy();
    expect(hidden.request).toBeTruthy();
  });

  test("unknown client, missing or unregistered redirect_uri: an error page, never a redirect", async () => {
    const { params } = await setup();
    const cases: Record<string, string | null>[] = [
      { client_id: "oc_nobody" },
      { client_id: null },
      { redirect_uri: "https://evil.example/cb" },
      { redirect_uri: null },
    ];
    for (const bad of cases) {
      const res = await ctx.request("GET", params(bad));
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(res.text).toContain('role="alert"');
    }
  });

  test("plain or missing PKCE method, missing challenge: redirect with invalid_request and state", async () => {
    const { params, client } = await setup();
    const cases: Record<string, string | null>[] = [
      { code_challenge_method: "plain" },
      { code_challenge_method: null },
      { code_challenge: null },
      { code_challenge: "short" },
    ];
    for (const bad of cases) {
      const q = redirectParams(await ctx.request("GET", params(bad)), client.redirectUri);
      expect(q.get("error")).toBe("invalid_request");
      expect(q.get("state")).toBe("xyz");
      expect(q.get("code")).toBeNull();
    }
  });

  test("response_type other than code: unsupported_response_type", async () => {
    const { params, client } = await setup();
    const q = redirectParams(await ctx.request("GET", params({ response_type: "token" })), client.redirectUri);
    expect(q.get("error")).toBe("unsupported_response_type");
  });

  test("a NUL in a parameter: the page for client_id or redirect_uri, invalid_request to the client for any other (it answered API.md §1's JSON 422)", async () => {
    const { params, client } = await setup();
    const cases: Record<string, string>[] = [{ client_id: "oc_\u0000x" }, { redirect_uri: `${client.redirectUri}\u0000` }];
    for (const bad of cases) {
      const res = await ctx.request("GET", params(bad));
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(res.headers.get("location")).toBeNull();
    }
    // A NUL state is not sent back; any other parameter's NUL keeps the client's state.
    for (const [path, state] of [
      [params({ state: "\u0000" }), null],
      [`${params()}&x=%00`, "xyz"],
    ] as const) {
      const q = redirectParams(await ctx.request("GET", path), client.redirectUri);
      expect([path, q.get("error"), q.get("error_description"), q.get("state")]).toEqual([
        path,
        "invalid_request",
        "A parameter holds a NUL character.",
        state,
      ]);
    }
  });

  test("a repeated parameter: invalid_request", async () => {
    const { params, client } = await setup();
    const q = redirectParams(await ctx.request("GET", `${params()}&state=again`), client.redirectUri);
    expect(q.get("error")).toBe("invalid_request");
  });
});

describe("POST /oauth/authorize (the page's steps)", () => {
  async function start() {
    const s = await setup();
    const page = await ctx.request("GET", s.params());
    const cookie = cookieFrom(page.headers);
    const post = (form: Record<string, string>, headers: Record<string, string> = { cookie }) => ctx.request("POST", "/oauth/authorize", { form, headers });
    return { ...s, page, cookie, post };
  }

  test("a NUL in a field: the page says the request is invalid (it answered API.md §1's JSON 422)", async () => {
    const { page, post, user } = await start();
    const res = await post({ ...hiddenInputs(page.text), email: `${user.email}\u0000`, password: "x" });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.text).toContain("Invalid request");
  });

  test("a wrong password re-renders the form with the error tied to the field", async () => {
    const { page, post, user } = await start();
    const res = await post({ ...hiddenInputs(page.text), email: user.email, password: "wrong" });
    expect(res.status).toBe(401);
    expect(res.text).toContain('aria-invalid="true" aria-describedby="password-error"');
    expect(res.text).toContain('id="password-error"');
    expect(res.text).toContain(`value="${user.email}"`);
    expect(res.text).toContain("<title>Error: Sign in · simhost</title>");
  });

  test("empty fields: one message per field", async () => {
    const { page, post } = await start();
    const res = await post({ ...hiddenInputs(page.text), email: "", password: "" });
    expect(res.status).toBe(422);
    expect(res.text).toContain('id="email-error"');
    expect(res.text).toContain('id="password-error"');
  });

  test("without the CSRF cookie, or with another browser's cookie, nothing happens", async () => {
    const { page, post, user } = await start();
    const form = { ...hiddenInputs(page.text), email: user.email, password: user.password };
    const variants: Record<string, string>[] = [{}, { cookie: "simhost_oauth_csrf=someoneelse" }];
    for (const headers of variants) {
      const res = await post(form, headers);
      expect(res.status).toBe(403);
      expect(res.text).not.toContain("Allow");
      expect(res.headers.get("location")).toBeNull();
    }
  });

  test("a tampered request token shows an error page", async () => {
    const { page, post, user } = await start();
    const hidden = hiddenInputs(page.text);
    const res = await post({ ...hidden, request: `${hidden.request}x`, email: user.email, password: user.password });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });

  test("2FA: a wrong code is refused, the right one leads to consent; deny redirects with access_denied", async () => {
    const { page, post, user, client } = await start();
    await enableTotp(ctx.sql, user.id);
    const totp = await post({ ...hiddenInputs(page.text), email: user.email, password: user.password });
    expect(totp.status).toBe(200);
    expect(totp.text).toContain('<label for="code">');
    const wrongCode = String((Number(totpCode(TEST_TOTP_SECRET)) + 500_000) % 1_000_000).padStart(6, "0");
    const wrong = await post({ ...hiddenInputs(totp.text), code: wrongCode });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('aria-describedby="code-error code-help"');
    const consent = await post({ ...hiddenInputs(wrong.text), code: totpCode(TEST_TOTP_SECRET) });
    expect(consent.text).toContain("Allow simhost browser extension to use your account?");
    const q = redirectParams(await post({ ...hiddenInputs(consent.text), decision: "deny" }), client.redirectUri);
    expect(q.get("error")).toBe("access_denied");
    expect(q.get("state")).toBe("xyz");
  }, 30_000);

  test("a consent ticket cannot skip the TOTP step", async () => {
    const { page, post, user } = await start();
    await enableTotp(ctx.sql, user.id);
    const totp = await post({ ...hiddenInputs(page.text), email: user.email, password: user.password });
    const res = await post({ ...hiddenInputs(totp.text), step: "consent", decision: "approve" });
    expect(res.status).toBe(403);
    expect(res.headers.get("location")).toBeNull();
  });

  test("10 wrong passwords for an email: the page refuses further tries for a while (429)", async () => {
    const { page, post, user } = await start();
    let res = page;
    for (let i = 0; i < 10; i++) res = await post({ ...hiddenInputs(res.text), email: user.email, password: `wrong ${i}` });
    res = await post({ ...hiddenInputs(res.text), email: user.email, password: user.password });
    expect(res.status).toBe(429);
    expect(res.text).toContain("Too many failed attempts");
    expect(res.text).not.toContain("Allow");
  }, 30_000);

  test("an email spelt with İ (lower() finds the account, JavaScript's lower case does not) is refused: no fresh throttle counters", async () => {
    const { page, post, user } = await start();
    let res = page;
    for (let i = 0; i < 10; i++) res = await post({ ...hiddenInputs(res.text), email: user.email, password: `wrong ${i}` });
    expect((await post({ ...hiddenInputs(res.text), email: user.email, password: user.password })).status).toBe(429);
    const spelt = user.email.replace(/^[^@]*/, (local) => `${local}i`.replace(/i/g, "\u0130"));
    const other = await post({ ...hiddenInputs(page.text), email: spelt, password: user.password });
    expect(other.status).toBe(422);
    expect(other.text).toContain("Enter an email address like name@example.com.");
  }, 30_000);

  test("with 2FA on, a right password on the page does not clear the wrong codes given through the API", async () => {
    const { page, post, user } = await start();
    await enableTotp(ctx.sql, user.id);
    const near = new Set([-1, 0, 1].map((o) => totpCode(TEST_TOTP_SECRET, Date.now() + o * 30_000)));
    const wrong = ["000000", "111111", "222222"].find((c) => !near.has(c))!;
    const tmpToken = async () => (await ctx.request("POST", "/api/auth/login", { body: { email: user.email, password: user.password } })).body.tmp_token;
    const statuses: number[] = [];
    for (let round = 0; round < 3; round++) {
      // 8 wrong codes over two tmp_tokens (5 attempts each at most), then the password on the page.
      for (const token of [await tmpToken(), await tmpToken()])
        for (let i = 0; i < 4; i++) statuses.push((await ctx.request("POST", "/api/auth/2fa/verify", { body: { tmp_token: token, code: wrong } })).status);
      // The right password (it cleared every failure before, wrong codes included).
      await post({ ...hiddenInputs(page.text), email: user.email, password: user.password });
    }
    // Past the free failures every further code waits, however often the page took the password.
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(11)).toContain(429);
  }, 60_000);

  test("a TOTP code works once: the same code on a second sign-in is refused", async () => {
    const { page, post, user } = await start();
    await enableTotp(ctx.sql, user.id);
    const signIn = async () => post({ ...hiddenInputs(page.text), email: user.email, password: user.password });
    const code = totpCode(TEST_TOTP_SECRET);
    const first = await post({ ...hiddenInputs((await signIn()).text), code });
    expect(first.text).toContain("Allow");
    const second = await post({ ...hiddenInputs((await signIn()).text), code });
    expect(second.status).toBe(401);
  }, 30_000);

  test("approve redirects with a code and the state", async () => {
    const { page, post, user, client } = await start();
    const consent = await post({ ...hiddenInputs(page.text), email: user.email.toUpperCase(), password: user.password });
    const q = redirectParams(await post({ ...hiddenInputs(consent.text), decision: "approve" }), client.redirectUri);
    expect(q.get("code")).toMatch(/^\w{43}$/);
    expect(q.get("state")).toBe("xyz");
  });
});
