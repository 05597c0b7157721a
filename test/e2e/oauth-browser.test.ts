import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as oauth from "oauth4webapi";
import type { Browser, Page } from "playwright-core";
import { createTenant } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import { createOAuthClient, enableTotp, totpCode } from "../integration/oauth-flow";
import { CHROMIUM, launchChromium, warnIfNoChromium } from "./browser";

/**
 * The whole flow as the browser extension lives it: oauth4webapi discovers the server, builds
 * the PKCE request and redeems the code; a headless Chromium fills the sign-in page (and the
 * TOTP step of a 2FA account) and follows the redirect to a real local callback server.
 */
warnIfNoChromium("oauth browser test");

const insecure = { [oauth.allowInsecureRequests]: true } as const;
let ctx: TestContext;
let base: string;
let browser: Browser;
let callback: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  if (!CHROMIUM) return;
  // The issuer must be the URL clients see, so take a free port first and configure it.
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port;
  probe.stop(true);
  base = `http://127.0.0.1:${port}`;
  ctx = await createTestContext({ PUBLIC_URL: base, PORT: String(port) });
  ctx.app.listen({ port, hostname: "127.0.0.1" });
  callback = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response("<title>Signed in</title>You can close this window.", { headers: { "content-type": "text/html" } }),
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  callback?.stop(true);
  await ctx?.app.stop();
  await ctx?.close();
});

async function startFlow() {
  const issuer = new URL(base);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: "oauth2" }));
  const redirectUri = `http://127.0.0.1:${callback.port}/callback`;
  const registered = await createOAuthClient(ctx.sql, [redirectUri], "Browser Extension");
  const client: oauth.Client = { client_id: registered.clientId };
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", client.client_id);
  url.searchParams.set("redirect_uri", redirectUri);
  url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set("code_challenge_method", "S256");
  url.searchParams.set("state", state);
  return { as, client, redirectUri, verifier, state, url };
}

async function redeem(flow: Awaited<ReturnType<typeof startFlow>>, page: Page) {
  await page.waitForURL((u) => u.pathname === "/callback");
  const params = oauth.validateAuthResponse(flow.as, flow.client, new URL(page.url()), flow.state);
  const res = await oauth.authorizationCodeGrantRequest(flow.as, flow.client, oauth.None(), params, flow.redirectUri, flow.verifier, insecure);
  return oauth.processAuthorizationCodeResponse(flow.as, flow.client, res);
}

async function me(token: string) {
  const res = await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as { auth_type: string; user: { email: string } } };
}

describe.skipIf(!CHROMIUM)("OAuth in a real browser", () => {
  test("sign in, consent, code exchange: the token acts as the user (auth_type oauth)", async () => {
    const { user } = await createTenant(ctx.sql);
    const flow = await startFlow();
    const page = await browser.newPage();
    await page.goto(flow.url.href);
    // The email field takes the focus (Chromium applies autofocus at its next rendering update,
    // which may come after the load event goto waits for); Tab walks email → password → the button.
    // Predicates as functions: a string one is run with eval while Playwright polls, which the
    // page's CSP (default-src 'none') refuses, so the wait failed whenever the focus came late.
    await page.waitForFunction(() => document.activeElement?.id === "email", null, { timeout: 5000 });
    expect(await page.evaluate("document.activeElement?.id")).toBe("email");
    await page.keyboard.type(user.email);
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.id")).toBe("password");
    await page.keyboard.type("not the password");
    await page.keyboard.press("Enter");
    // The error is announced with the password field, which takes the focus again.
    await page.locator("#password-error").waitFor();
    expect(await page.locator("#password-error").textContent()).toBe("The email or password is incorrect.");
    await page.waitForFunction(() => document.activeElement?.id === "password", null, { timeout: 5000 });
    expect(await page.evaluate('document.activeElement?.getAttribute("aria-describedby")')).toBe("password-error");
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Allow Browser Extension to use your account?" }).waitFor();
    await page.getByRole("button", { name: "Allow" }).click();
    const tokens = await redeem(flow, page);
    const who = await me(tokens.access_token);
    expect(who.status).toBe(200);
    expect(who.body.auth_type).toBe("oauth");
    expect(who.body.user.email).toBe(user.email);
    await page.close();
  }, 60_000);

  test("a 2FA account enters its TOTP code between password and consent", async () => {
    const { user } = await createTenant(ctx.sql);
    const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
    await enableTotp(ctx.sql, user.id, secret);
    const flow = await startFlow();
    const page = await browser.newPage();
    await page.goto(flow.url.href);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByLabel("Authentication code").fill(totpCode(secret));
    await page.getByRole("button", { name: "Verify" }).click();
    await page.getByRole("button", { name: "Allow" }).click();
    const tokens = await redeem(flow, page);
    expect((await me(tokens.access_token)).body.auth_type).toBe("oauth");
    await page.close();
  }, 60_000);

  test("deny sends the browser back with error=access_denied and the state", async () => {
    const { user } = await createTenant(ctx.sql);
    const flow = await startFlow();
    const page = await browser.newPage();
    await page.goto(flow.url.href);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Deny" }).click();
    await page.waitForURL((u) => u.pathname === "/callback");
    const back = new URL(page.url()).searchParams;
    expect(back.get("error")).toBe("access_denied");
    expect(back.get("state")).toBe(flow.state);
    await page.close();
  }, 60_000);
});
