import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, newContext, signIn, startConsoleWorld, stopConsoleWorld, watchConsoleErrors } from "./console-helpers";

/**
 * docs/console.md "Threat model": the console is its own origin's only script (CSP), cannot be
 * framed, keeps its bearer token in sessionStorage only (no cookie: nothing for CSRF to ride on),
 * and signing out ends the token on the server and in every tab.
 */
warnIfNoChromium("console security browser tests");

let w: ConsoleWorld;
beforeAll(async () => {
  w = await startConsoleWorld();
}, 60_000);
afterAll(() => stopConsoleWorld(w));

describe("serving the console", () => {
  test("the page: strict CSP, no framing, no inline script, no other origin, no cookie", async () => {
    const res = await fetch(`${w.base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/html");
    const csp = res.headers.get("content-security-policy") ?? "";
    for (const d of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"])
      expect(csp).toContain(d);
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    expect(csp).toMatch(/connect-src 'self' ws:\/\/127\.0\.0\.1:\d+(;|$)/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("set-cookie")).toBeNull();
    const html = await res.text();
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // every script is a file of this origin
    expect(html).not.toMatch(/\son[a-z]+=/i); // no inline event handlers
  });

  test("assets: hashed names, cached for good, same headers; the first page's JavaScript is at most 150 KB gzipped", async () => {
    const html = await (await fetch(`${w.base}/`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
    let gzipped = 0;
    for (const a of assets) {
      expect(a).toMatch(/-[a-z0-9]{8}\.(js|css)$/);
      const res = await fetch(`${w.base}${a}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      const body = new Uint8Array(await res.arrayBuffer());
      if (a.endsWith(".js")) gzipped += Bun.gzipSync(body).length;
    }
    const { consoleBundle } = await import("../../server/console/bundle");
    const bundle = await consoleBundle();
    expect(bundle.firstPageGzipBytes).toBeGreaterThanOrEqual(gzipped);
    expect(bundle.firstPageGzipBytes).toBeLessThanOrEqual(150 * 1024);
    const missing = await fetch(`${w.base}/assets/nope-12345678.js`);
    expect([missing.status, ((await missing.json()) as { code: string }).code]).toEqual([404, "not_found"]);
  });

  test("client-side routes answer the page to browsers; the API, docs, OAuth and realtime keep their own answers", async () => {
    const page = (path: string, accept = "text/html,application/xhtml+xml") => fetch(`${w.base}${path}`, { headers: { accept } });
    for (const path of ["/inbox", "/numbers", "/devices/12", "/account"]) {
      const res = await page(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(await res.text()).toContain('<div id="app">');
    }
    // Not a browser asking for a page: the API's 404.
    const json = await page("/inbox", "application/json");
    expect(json.status).toBe(404);
    expect((await json.json()).code).toBe("not_found");
    for (const path of ["/api/nothing-here", "/api/v1/nothing-here", "/oauth/nothing", "/docs/nothing"]) {
      const res = await page(path);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toStartWith("application/json");
    }
    // The realtime endpoint asks for a WebSocket upgrade, as before.
    expect((await page("/app/some-key")).status).toBe(426);
    // Versioned API paths are still re-handled, not swallowed by the console.
    expect((await page("/api/v1/health", "application/json")).status).toBe(200);
    expect((await page("/docs")).headers.get("content-security-policy")).toContain("default-src 'none'");
    // A POST to a console path is not a page.
    expect((await fetch(`${w.base}/inbox`, { method: "POST", headers: { accept: "text/html" } })).status).toBe(404);
  });
});

describe.skipIf(!CHROMIUM)("in a browser", () => {
  test("a page of another origin cannot frame the console", async () => {
    const context = await newContext(w);
    const page = await context.newPage();
    const other = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => new Response(`<!doctype html><iframe id="f" src="${w.base}/"></iframe>`, { headers: { "content-type": "text/html" } }),
    });
    try {
      await page.goto(`http://127.0.0.1:${other.port}/`);
      const frame = page.frames().find((f) => f !== page.mainFrame());
      // Chromium replaces a refused frame with an error page: the console's markup never loads in it.
      await page.waitForTimeout(0);
      const content = frame ? await frame.content().catch(() => "") : "";
      expect(content).not.toContain('<div id="app">');
    } finally {
      other.stop(true);
      await context.close();
    }
  });

  test("the token lives in sessionStorage only; signing out ends it on the server and in every tab", async () => {
    const { user } = await createMember(w.ctx.sql);
    const context = await newContext(w);
    const page = await context.newPage();
    const errors = watchConsoleErrors(page);
    await signIn(page, user.email);
    const token = await page.evaluate(() => sessionStorage.getItem("simhost.token"));
    expect(token).toBeTruthy();
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await context.cookies()).toEqual([]);
    expect((await fetch(`${w.base}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);

    // A second tab opened from the first (it copies sessionStorage, as browsers do).
    const [second] = await Promise.all([context.waitForEvent("page"), page.evaluate(() => window.open("/numbers"))]);
    await second.getByRole("button", { name: "Sign out", exact: true }).waitFor();

    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    await second.getByRole("button", { name: "Sign in" }).waitFor();
    expect(await second.evaluate(() => sessionStorage.getItem("simhost.token"))).toBeNull();
    expect((await fetch(`${w.base}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    expect(errors.filter((e) => /Content Security Policy/.test(e))).toEqual([]);
    await context.close();
  }, 60_000);
});
