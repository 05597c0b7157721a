import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import * as oauth from "oauth4webapi";
import { addressKey } from "../../server/auth/limits";
import { createTenant, sessionFor } from "../fixtures";
import { sharedTestContext, type TestContext } from "../helpers";
import { cookieFrom, createOAuthClient, enableTotp, hiddenInputs, TEST_TOTP_SECRET, totpCode } from "./oauth-flow";

/**
 * The token endpoint driven by oauth4webapi (the client the browser extension uses), with the
 * sign-in page filled in-process. The e2e test does the same with a real browser.
 */
let ctx: TestContext;
const as: oauth.AuthorizationServer = {
  issuer: "http://localhost:3000",
  authorization_endpoint: "http://localhost:3000/oauth/authorize",
  token_endpoint: "http://localhost:3000/oauth/token",
  revocation_endpoint: "http://localhost:3000/oauth/revoke",
};
// In-process: oauth4webapi's requests go to app.handle; http is fine there.
const opts = (extra: object = {}) =>
  ({
    [oauth.allowInsecureRequests]: true,
    [oauth.customFetch]: (url: string, init: RequestInit) => ctx.app.handle(new Request(url, init)),
    ...extra,
  }) as never;

// Generous: the first file to ask starts the embedded database and migrates it, on a busy machine.
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);
// In-process requests share one client address; the API login tests count failures on it too.
afterEach(async () => {
  await ctx.services.limiter.reset(addressKey("local"));
});

type Flow = { client: oauth.Client; redirectUri: string; verifier: string; challenge: string; state: string; email: string; password: string };

async function newFlow(opts: { totp?: boolean } = {}): Promise<Flow & { userId: number }> {
  const { user } = await createTenant(ctx.sql);
  if (opts.totp) await enableTotp(ctx.sql, user.id);
  const c = await createOAuthClient(ctx.sql);
  const verifier = oauth.generateRandomCodeVerifier();
  return {
    client: { client_id: c.clientId },
    redirectUri: c.redirectUri,
    verifier,
    challenge: await oauth.calculatePKCECodeChallenge(verifier),
    state: oauth.generateRandomState(),
    email: user.email,
    password: user.password,
    userId: user.id,
  };
}

const authorizeQuery = (f: Flow) =>
  new URLSearchParams({
    response_type: "code",
    client_id: f.client.client_id,
    redirect_uri: f.redirectUri,
    code_challenge: f.challenge,
    code_challenge_method: "S256",
    state: f.state,
  });

/** Signs in through the page as a browser would and returns the redirect back to the client. */
async function approveViaPage(f: Flow, opts: { totpSecret?: string; decision?: "approve" | "deny" } = {}): Promise<URL> {
  const page = await ctx.request("GET", `/oauth/authorize?${authorizeQuery(f)}`);
  expect(page.status).toBe(200);
  const cookie = cookieFrom(page.headers);
  const post = (form: Record<string, string>) => ctx.request("POST", "/oauth/authorize", { form, headers: { cookie } });
  let res = await post({ ...hiddenInputs(page.text), email: f.email, password: f.password });
  if (opts.totpSecret) {
    expect(res.text).toContain('autocomplete="one-time-code"');
    res = await post({ ...hiddenInputs(res.text), code: totpCode(opts.totpSecret) });
  }
  expect(res.text).toContain("Allow");
  res = await post({ ...hiddenInputs(res.text), decision: opts.decision ?? "approve" });
  expect(res.status).toBe(303);
  return new URL(res.headers.get("location")!);
}

async function exchange(f: Flow, callback: URL, overrides: { verifier?: string; redirectUri?: string } = {}) {
  const params = oauth.validateAuthResponse(as, f.client, callback, f.state);
  const res = await oauth.authorizationCodeGrantRequest(
    as,
    f.client,
    oauth.None(),
    params,
    overrides.redirectUri ?? f.redirectUri,
    overrides.verifier ?? f.verifier,
    opts(),
  );
  return res;
}

async function rfcError(res: Response) {
  expect(res.headers.get("cache-control")).toBe("no-store");
  const body = (await res.json()) as { error: string; error_description: string };
  expect(typeof body.error_description).toBe("string");
  return body.error;
}

const me = (token: string) => ctx.request("GET", "/api/me", { token });

describe("OAuth token endpoint", () => {
  test("code + verifier → tokens that act as the user with auth_type oauth", async () => {
    const f = await newFlow();
    const res = await exchange(f, await approveViaPage(f));
    expect(res.headers.get("cache-control")).toBe("no-store");
    const tokens = await oauth.processAuthorizationCodeResponse(as, f.client, res);
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.expires_in).toBe(ctx.config.OAUTH_ACCESS_TOKEN_SECONDS);
    expect(tokens.refresh_token).toMatch(/^rt_/);
    const who = await me(tokens.access_token);
    expect(who.status).toBe(200);
    expect(who.body.auth_type).toBe("oauth");
    expect(who.body.user.email).toBe(f.email);
  });

  test("a 2FA account signs in with its TOTP code", async () => {
    const f = await newFlow({ totp: true });
    const tokens = await oauth.processAuthorizationCodeResponse(as, f.client, await exchange(f, await approveViaPage(f, { totpSecret: TEST_TOTP_SECRET })));
    expect((await me(tokens.access_token)).body.auth_type).toBe("oauth");
  });

  test("wrong code_verifier: invalid_grant", async () => {
    const f = await newFlow();
    const res = await exchange(f, await approveViaPage(f), { verifier: oauth.generateRandomCodeVerifier() });
    expect(res.status).toBe(400);
    expect(await rfcError(res)).toBe("invalid_grant");
  });

  test("wrong redirect_uri: invalid_grant", async () => {
    const f = await newFlow();
    const res = await exchange(f, await approveViaPage(f), { redirectUri: "http://127.0.0.1:7777/other" });
    expect(await rfcError(res)).toBe("invalid_grant");
  });

  test("expired code: invalid_grant", async () => {
    const f = await newFlow();
    const callback = await approveViaPage(f);
    await ctx.sql`update oauth_authorization_codes set expires_at = now() - interval '1 second'
      where client_id = (select id from oauth_clients where client_id = ${f.client.client_id})`;
    expect(await rfcError(await exchange(f, callback))).toBe("invalid_grant");
  });

  test("reused code: invalid_grant, and the tokens issued from it are revoked", async () => {
    const f = await newFlow();
    const callback = await approveViaPage(f);
    const tokens = await oauth.processAuthorizationCodeResponse(as, f.client, await exchange(f, callback));
    expect((await me(tokens.access_token)).status).toBe(200);
    expect(await rfcError(await exchange(f, callback))).toBe("invalid_grant");
    expect((await me(tokens.access_token)).status).toBe(401);
    const refreshed = await oauth.refreshTokenGrantRequest(as, f.client, oauth.None(), tokens.refresh_token!, opts());
    expect(await rfcError(refreshed)).toBe("invalid_grant");
  });

  test("plain PKCE method: the redirect carries invalid_request, which the client library reports", async () => {
    const f = await newFlow();
    const url = new URLSearchParams({
      response_type: "code",
      client_id: f.client.client_id,
      redirect_uri: f.redirectUri,
      code_challenge: f.verifier,
      code_challenge_method: "plain",
      state: f.state,
    });
    const res = await ctx.request("GET", `/oauth/authorize?${url}`);
    expect(res.status).toBe(303);
    const callback = new URL(res.headers.get("location")!);
    let error: unknown;
    try {
      oauth.validateAuthResponse(as, f.client, callback, f.state);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(oauth.AuthorizationResponseError);
    expect((error as oauth.AuthorizationResponseError).error).toBe("invalid_request");
  });

  test("unknown client: invalid_client (401)", async () => {
    const f = await newFlow();
    const callback = await approveViaPage(f);
    const res = await exchange({ ...f, client: { client_id: "oc_nobody" } }, callback);
    expect(res.status).toBe(401);
    expect(await rfcError(res)).toBe("invalid_client");
  });

  test("malformed requests: invalid_request, unsupported_grant_type", async () => {
    const post = (form: Record<string, string>) => ctx.request("POST", "/oauth/token", { form });
    const missing = await post({ grant_type: "authorization_code", client_id: "x" });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: "invalid_request", error_description: "The code parameter is required." });
    expect((await post({ grant_type: "password", username: "a", password: "b" })).body.error).toBe("unsupported_grant_type");
    expect((await post({})).body.error).toBe("invalid_request");
    const json = await ctx.request("POST", "/oauth/token", { body: { grant_type: "authorization_code" } });
    expect(json.body.error).toBe("invalid_request");
    const dup = await ctx.request("POST", "/oauth/token", {
      body: "grant_type=refresh_token&refresh_token=a&refresh_token=b&client_id=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(dup.body.error).toBe("invalid_request");
  });

  test("access tokens expire", async () => {
    const f = await newFlow();
    const tokens = await oauth.processAuthorizationCodeResponse(as, f.client, await exchange(f, await approveViaPage(f)));
    await ctx.sql`update sessions set expires_at = now() - interval '1 second' where user_id = ${f.userId} and kind = 'oauth'`;
    expect((await me(tokens.access_token)).status).toBe(401);
  });
});

/** A password change or revoke-others made from a new session of the flow's user; answers that session. */
async function signOutOthers(end: "password" | "revoke-others", f: Flow & { userId: number }) {
  const session = await sessionFor(ctx.sql, f.userId);
  const res =
    end === "password"
      ? await ctx.request("POST", "/api/auth/password", { token: session, body: { current_password: f.password, new_password: "another password 1" } })
      : await ctx.request("POST", "/api/auth/sessions/revoke-others", { token: session });
  expect([end, res.status]).toEqual([end, 200]);
  return session;
}

describe("OAuth refresh and revocation", () => {
  async function issued() {
    const f = await newFlow();
    const tokens = await oauth.processAuthorizationCodeResponse(as, f.client, await exchange(f, await approveViaPage(f)));
    return { f, tokens };
  }
  const refresh = (f: Flow, token: string) => oauth.refreshTokenGrantRequest(as, f.client, oauth.None(), token, opts());

  test("refresh rotates: new access and refresh tokens, the old refresh token is spent", async () => {
    const { f, tokens } = await issued();
    const next = await oauth.processRefreshTokenResponse(as, f.client, await refresh(f, tokens.refresh_token!));
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect((await me(next.access_token)).body.auth_type).toBe("oauth");
    const again = await oauth.processRefreshTokenResponse(as, f.client, await refresh(f, next.refresh_token!));
    expect((await me(again.access_token)).status).toBe(200);
  });

  test("reusing a rotated refresh token revokes the whole family", async () => {
    const { f, tokens } = await issued();
    const next = await oauth.processRefreshTokenResponse(as, f.client, await refresh(f, tokens.refresh_token!));
    expect(await rfcError(await refresh(f, tokens.refresh_token!))).toBe("invalid_grant");
    expect((await me(next.access_token)).status).toBe(401);
    expect((await me(tokens.access_token)).status).toBe(401);
    expect(await rfcError(await refresh(f, next.refresh_token!))).toBe("invalid_grant");
  });

  test("two parallel redemptions of one code: one answer has tokens, the other invalid_grant, and those tokens are revoked", async () => {
    const f = await newFlow();
    const callback = await approveViaPage(f);
    const answers = await Promise.all([exchange(f, callback), exchange(f, callback)]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400]);
    const ok = answers.find((r) => r.status === 200)!;
    const tokens = await oauth.processAuthorizationCodeResponse(as, f.client, ok);
    expect((await me(tokens.access_token)).status).toBe(401);
  });

  test("two parallel refreshes with one token: the family is revoked", async () => {
    const { f, tokens } = await issued();
    const answers = await Promise.all([refresh(f, tokens.refresh_token!), refresh(f, tokens.refresh_token!)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
    const next = await oauth.processRefreshTokenResponse(as, f.client, answers.find((r) => r.status === 200)!);
    expect((await me(next.access_token)).status).toBe(401);
  });

  test("a password change or revoke-others ends the user's OAuth grants: their refresh tokens mint nothing, one whose access token expired included", async () => {
    for (const end of ["password", "revoke-others"] as const) {
      const { f, tokens } = await issued();
      // A second grant whose access token has expired: its refresh token still works until the user signs out.
      const idle = await oauth.processAuthorizationCodeResponse(as, f.client, await exchange(f, await approveViaPage(f)));
      await ctx.sql`update sessions set expires_at = now() - interval '1 second' where id = (select id from sessions where user_id = ${f.userId} and kind = 'oauth' order by id desc limit 1)`;
      const session = await signOutOthers(end, f);
      expect((await me(tokens.access_token)).status).toBe(401);
      for (const t of [tokens, idle]) expect([end, await rfcError(await refresh(f, t.refresh_token!))]).toEqual([end, "invalid_grant"]);
      expect((await me(session)).status).toBe(200);
    }
  });

  test("a code or a sign-in page from before a password change or revoke-others yields nothing after it", async () => {
    for (const end of ["password", "revoke-others"] as const) {
      const f = await newFlow();
      const code = await approveViaPage(f);
      // A second sign-in left on its consent page, its password already checked.
      const page = await ctx.request("GET", `/oauth/authorize?${authorizeQuery(f)}`);
      const cookie = cookieFrom(page.headers);
      const post = (form: Record<string, string>) => ctx.request("POST", "/oauth/authorize", { form, headers: { cookie } });
      const consent = await post({ ...hiddenInputs(page.text), email: f.email, password: f.password });
      expect(consent.text).toContain("Allow");
      await signOutOthers(end, f);
      expect([end, await rfcError(await exchange(f, code))]).toEqual([end, "invalid_grant"]);
      const approved = await post({ ...hiddenInputs(consent.text), decision: "approve" });
      expect([end, approved.status]).toEqual([end, 403]);
      expect(approved.text).toContain("Please sign in again");
      expect([end, (await ctx.sql`select id from oauth_grants where user_id = ${f.userId}`).length]).toEqual([end, 0]);
    }
  });

  test("signing out one OAuth token ends its grant, its other access tokens too; the user's other grants and tokens stay", async () => {
    const { f, tokens } = await issued();
    // Refreshed: the grant holds two live access tokens.
    const next = await oauth.processRefreshTokenResponse(as, f.client, await refresh(f, tokens.refresh_token!));
    const other = await oauth.processAuthorizationCodeResponse(as, f.client, await exchange(f, await approveViaPage(f)));
    const session = await sessionFor(ctx.sql, f.userId);
    const listed = (await ctx.request("GET", "/api/auth/sessions", { token: session })).body.data as { id: number; kind: string }[];
    const [first] = await ctx.sql<{ id: number }[]>`
      select s.id from sessions s join oauth_access_tokens a on a.session_id = s.id where s.user_id = ${f.userId} order by s.id limit 1`;
    expect(listed.filter((s) => s.kind === "oauth").length).toBe(3);
    expect((await ctx.request("DELETE", `/api/auth/sessions/${first!.id}`, { token: session })).status).toBe(204);
    expect((await me(tokens.access_token)).status).toBe(401);
    expect((await me(next.access_token)).status).toBe(401);
    expect(await rfcError(await refresh(f, next.refresh_token!))).toBe("invalid_grant");
    expect((await me(other.access_token)).status).toBe(200);
    expect((await oauth.processRefreshTokenResponse(as, f.client, await refresh(f, other.refresh_token!))).access_token).toBeTruthy();
    expect((await me(session)).status).toBe(200);
  });

  test("POST /api/auth/logout with an OAuth access token ends its grant as DELETE /api/auth/sessions/{current} does", async () => {
    const { f, tokens } = await issued();
    expect((await ctx.request("POST", "/api/auth/logout", { token: tokens.access_token })).status).toBe(204);
    expect((await me(tokens.access_token)).status).toBe(401);
    // The extension's refresh token mints nothing: it was signed out.
    expect(await rfcError(await refresh(f, tokens.refresh_token!))).toBe("invalid_grant");
  });

  test("a refresh token of another client: invalid_grant", async () => {
    const { tokens } = await issued();
    const other = await newFlow();
    expect(await rfcError(await refresh(other, tokens.refresh_token!))).toBe("invalid_grant");
  });

  test("revoking a refresh token revokes its grant (RFC 7009)", async () => {
    const { f, tokens } = await issued();
    const res = await oauth.revocationRequest(as, f.client, oauth.None(), tokens.refresh_token!, opts());
    expect(res.status).toBe(200);
    await oauth.processRevocationResponse(res);
    expect((await me(tokens.access_token)).status).toBe(401);
    expect(await rfcError(await refresh(f, tokens.refresh_token!))).toBe("invalid_grant");
  });

  test("revoking an access token ends it alone; unknown tokens answer 200", async () => {
    const { f, tokens } = await issued();
    const res = await oauth.revocationRequest(
      as,
      f.client,
      oauth.None(),
      tokens.access_token,
      opts({ additionalParameters: { token_type_hint: "access_token" } }),
    );
    expect(res.status).toBe(200);
    expect((await me(tokens.access_token)).status).toBe(401);
    const next = await oauth.processRefreshTokenResponse(as, f.client, await refresh(f, tokens.refresh_token!));
    expect((await me(next.access_token)).status).toBe(200);
    expect((await oauth.revocationRequest(as, f.client, oauth.None(), "rt_unknown", opts())).status).toBe(200);
    // RFC 7009 2.1: a hint the server does not know is ignored; the token is still found and revoked.
    const odd = await oauth.revocationRequest(as, f.client, oauth.None(), next.access_token, opts({ additionalParameters: { token_type_hint: "foo" } }));
    expect(odd.status).toBe(200);
    expect((await me(next.access_token)).status).toBe(401);
  });

  test("revocation by another client leaves the token alone", async () => {
    const { tokens } = await issued();
    const other = await newFlow();
    expect((await oauth.revocationRequest(as, other.client, oauth.None(), tokens.access_token, opts())).status).toBe(200);
    expect((await me(tokens.access_token)).status).toBe(200);
    const unknown = await oauth.revocationRequest(as, { client_id: "oc_nobody" }, oauth.None(), tokens.access_token, opts());
    expect(await rfcError(unknown)).toBe("invalid_client");
  });
});

describe("NUL characters in the token and revocation forms", () => {
  const post = (path: string, body: string) =>
    ctx.app.handle(new Request(`http://localhost:3000${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body }));

  test("are invalid_request in RFC 6749's shape (a lookup of them answered API.md §1's 422)", async () => {
    for (const [path, body, field] of [
      ["/oauth/token", "grant_type=refresh_token&refresh_token=rt_x&client_id=%00x", "client_id"],
      ["/oauth/token", "grant_type=authorization_code&code=a%00&client_id=x&redirect_uri=x&code_verifier=x", "code"],
      ["/oauth/revoke", "token=abc&client_id=%00x", "client_id"],
    ] as const) {
      const res = await post(path, body);
      expect([path, field, res.status]).toEqual([path, field, 400]);
      expect(await rfcError(res)).toBe("invalid_request");
    }
  });
});

describe("OAuth housekeeping", () => {
  test("codes a day past expiry and expired refresh tokens are pruned when codes are redeemed", async () => {
    const f = await newFlow();
    await approveViaPage(f);
    const clientRow = ctx.sql`(select id from oauth_clients where client_id = ${f.client.client_id})`;
    await ctx.sql`update oauth_authorization_codes set expires_at = now() - interval '2 days' where client_id = ${clientRow}`;
    const g = await newFlow();
    const tokens = await oauth.processAuthorizationCodeResponse(as, g.client, await exchange(g, await approveViaPage(g)));
    const [codes] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from oauth_authorization_codes where client_id = ${clientRow}`;
    expect(codes!.n).toBe(0);
    await ctx.sql`update oauth_refresh_tokens set expires_at = now() - interval '1 second'
      where grant_id in (select id from oauth_grants where user_id = ${g.userId})`;
    expect(await rfcError(await oauth.refreshTokenGrantRequest(as, g.client, oauth.None(), tokens.refresh_token!, opts()))).toBe("invalid_grant");
    const h = await newFlow();
    await exchange(h, await approveViaPage(h));
    const [left] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from oauth_refresh_tokens where grant_id in (select id from oauth_grants where user_id = ${g.userId})`;
    expect(left!.n).toBe(0);
  }, 30_000);
});
