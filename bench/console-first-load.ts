/**
 * Web console first load (issue 18, Performance): in headless Chromium on localhost, the
 * JavaScript the first page loads (gzipped) and the time from navigation to the inbox showing
 * the first page of a number that holds 10,000 messages (the session already signed in, as a
 * reload or a second visit in the tab; the first, cold run also builds the bundle). Also: how
 * many messages the page holds after that first page (it must not load them all).
 *
 *   bun bench/console-first-load.ts [--messages 10000] [--runs 5]
 *
 * Uses the embedded database in a temporary folder (DATABASE_URL="" REDIS_URL="" by default),
 * or DATABASE_URL's server; needs Chromium (CHROMIUM_PATH or /usr/bin/chromium).
 */
import { gzipSync } from "node:zlib";
import { consoleBundle } from "../server/console/bundle";
import { storeInboundMessages } from "../server/messages/inbound";
import { CHROMIUM, launchChromium } from "../test/e2e/browser";
import { startServer, stopServer } from "../test/e2e/realtime-client";
import { createTenant } from "../test/fixtures";
import { attachNumber, createPoolNumber } from "../test/fixtures-numbers";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const MESSAGES = arg("messages", 10_000);
const RUNS = arg("runs", 5);
if (!CHROMIUM) throw new Error("No Chromium: set CHROMIUM_PATH or install chromium.");

const ctx = await startServer({ LOG_LEVEL: "warn" });
try {
  const { org, token } = await createTenant(ctx.sql);
  const sim = await createPoolNumber(ctx.sql);
  await attachNumber(ctx.sql, sim.id, org.id);
  const start = Date.now() - MESSAGES * 1000;
  for (let i = 0; i < MESSAGES; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, MESSAGES - i) }, (_, k) => ({
      hostedSimId: sim.id,
      from: "+15550004444",
      text: `Your code is ${String(100000 + i + k).slice(-6)}`,
      source: "provider" as const,
      externalId: `SMbench${i + k}`,
      receivedAt: new Date(start + (i + k) * 1000),
    }));
    await ctx.sql.begin((tx) => storeInboundMessages(tx, batch));
  }

  const browser = await launchChromium(["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]);
  const context = await browser.newContext({ baseURL: ctx.baseUrl });
  await context.addInitScript((t: string) => sessionStorage.setItem("simhost.token", t), token);
  const times: number[] = [];
  let jsGzip = 0;
  let held = 0;
  for (let run = 0; run <= RUNS; run++) {
    const page = await context.newPage();
    const scripts: Promise<number>[] = [];
    page.on("response", (r) => {
      if (r.url().endsWith(".js")) scripts.push(r.body().then((b) => gzipSync(b).length));
    });
    const t0 = performance.now();
    await page.goto(`/inbox?number=${sim.id}`);
    await page.locator("li.message").first().waitFor({ timeout: 60_000 });
    const ms = performance.now() - t0;
    if (run > 0) times.push(ms); // run 0 builds the bundle and warms the server
    jsGzip = (await Promise.all(scripts)).reduce((a, b) => a + b, 0);
    held = await page.locator("li.message").count();
    await page.close();
  }
  await browser.close();
  times.sort((a, b) => a - b);
  const bundle = await consoleBundle();
  const result = {
    bench: "console-first-load",
    messages: MESSAGES,
    runs: RUNS,
    first_page_js_gzip_bytes: jsGzip,
    first_page_js_gzip_bytes_by_bundle: bundle.firstPageGzipBytes,
    inbox_first_page_ms_median: Math.round(times[Math.floor(times.length / 2)]!),
    inbox_first_page_ms_max: Math.round(times.at(-1)!),
    messages_on_page_after_first_load: held,
  };
  console.log(JSON.stringify(result));
} finally {
  await stopServer(ctx);
}
