import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestContext, type TestContext } from "../helpers";
import { CHROMIUM, launchChromium, warnIfNoChromium } from "./browser";

/**
 * The API reference at /docs works on a machine without internet: the page, its scripts and the
 * document all come from the server itself, which a Content-Security-Policy of 'self' enforces.
 * A headless Chromium that can resolve no name but the server's renders it.
 */
warnIfNoChromium("docs browser test");

let ctx: TestContext;
let base: string;
let browser: Browser | undefined;

beforeAll(async () => {
  ctx = await createTestContext();
  const server = ctx.app.listen({ port: 0, hostname: "127.0.0.1" }).server!;
  base = `http://127.0.0.1:${server.port}`;
  if (!CHROMIUM) return;
  browser = await launchChromium([
    // Offline but for the server: any other host name fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
  ]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await ctx?.app.stop();
  await ctx?.close();
});

describe("API reference at /docs", () => {
  test("the page names no other origin and allows only its own (Content-Security-Policy)", async () => {
    const res = await fetch(`${base}/docs`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/https?:|\*/);
    const html = await res.text();
    expect(html).not.toMatch(/https?:\/\//);
    const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBe(2);
    for (const src of scripts) {
      const asset = await fetch(new URL(src, base));
      expect(asset.status).toBe(200);
      expect(asset.headers.get("content-type")).toStartWith("text/javascript");
      expect((await asset.text()).length).toBeGreaterThan(0);
    }
  });

  test("the document stays at /openapi.json and describes the error shape itself", async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { info: { description: string }; paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain("/api/auth/login");
    expect(Object.keys(doc.paths).some((p) => p.startsWith("/docs"))).toBe(false);
    expect(doc.info.description).not.toMatch(/API\.md|SPEC\.md|§/);
    expect(doc.info.description).toContain('{ "message": "Human-readable sentence.", "code": "machine_code", "errors": { "field": ["why"] } }');
  });

  test.skipIf(!CHROMIUM)(
    "renders the operations in a browser that reaches nothing but the server",
    async () => {
      const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
      const requested: string[] = [];
      const refused: string[] = [];
      page.on("request", (r) => requested.push(r.url()));
      page.on("console", (m) => {
        if (/Content Security Policy|ERR_NAME_NOT_RESOLVED/.test(m.text())) refused.push(m.text());
      });
      await page.goto(`${base}/docs`);
      // The operations list from the document: the first tag open, the others on a click.
      await page.getByText("Database, cache and queue status (no token needed)").first().waitFor({ timeout: 30_000 });
      await page.getByText("BYOS devices", { exact: true }).first().click();
      await page.getByText("List BYOS devices").first().waitFor();
      await page.getByText("Register a BYOS device").first().waitFor();
      await page.screenshot({ path: `${process.env.DOCS_SCREENSHOT_DIR ?? "/tmp"}/simhost-docs.png` });
      const foreign = requested.filter((url) => !url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== base);
      expect(foreign).toEqual([]);
      expect(requested).toContain(`${base}/openapi.json`);
      expect(refused).toEqual([]);
      await page.close();
    },
    60_000,
  );
});
