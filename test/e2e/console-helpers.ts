import { expect } from "bun:test";
import AxeBuilder from "@axe-core/playwright";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { type Provider, startProvider } from "../../device-sim/provider";
import { createOrg, createUser, TEST_PASSWORD } from "../fixtures";
import type { TestContext } from "../helpers";
import { CHROMIUM, launchChromium } from "./browser";
import { startServer, stopServer } from "./realtime-client";

/**
 * The web console's end-to-end setting: the server on a real port (PUBLIC_URL pointing at it, so
 * the realtime connection details are the real ones), its background jobs running (the inbound
 * fan-out that announces messages), device-sim's SMS provider emulator forwarding texts to it,
 * and a headless Chromium that can reach nothing but loopback.
 */
export type ConsoleWorld = { ctx: TestContext & { baseUrl: string; port: number }; provider: Provider; browser: Browser | undefined; base: string };

export async function startConsoleWorld(env: Record<string, string> = {}): Promise<ConsoleWorld> {
  const ctx = await startServer(env);
  ctx.services.start();
  const provider = startProvider({
    port: 0,
    serverUrl: ctx.baseUrl,
    publicUrl: ctx.config.PUBLIC_URL,
    authToken: ctx.config.PROVIDER_AUTH_TOKEN,
    providerNumber: ctx.config.PROVIDER_NUMBER,
  });
  const browser = CHROMIUM ? await launchChromium(["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]) : undefined;
  return { ctx, provider, browser, base: ctx.baseUrl };
}

export async function stopConsoleWorld(w: ConsoleWorld | undefined) {
  await w?.browser?.close();
  w?.provider.stop();
  if (w) await stopServer(w.ctx);
}

/** An organization and a user of it who signs in with email and password. */
export async function createMember(sql: TestContext["sql"], opts: { role?: "owner" | "admin" | "member"; orgId?: number; orgName?: string } = {}) {
  const org = opts.orgId ? { id: opts.orgId } : await createOrg(sql, { name: opts.orgName });
  const user = await createUser(sql, { orgId: org.id, role: opts.role ?? "owner" });
  return { orgId: org.id, user, password: TEST_PASSWORD };
}

export async function newContext(w: ConsoleWorld, width = 1280): Promise<BrowserContext> {
  const context = await w.browser!.newContext({ viewport: { width, height: 900 }, baseURL: w.base });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: w.base });
  return context;
}

/** Signs in through the console's form; resolves once the signed-in shell shows. */
export async function signIn(page: Page, email: string, password = TEST_PASSWORD, path = "/inbox") {
  await page.goto(path);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
}

/** The console's session token, as the page holds it (sessionStorage). */
export function tokenOf(page: Page): Promise<string> {
  return page.evaluate(() => sessionStorage.getItem("simhost.token") ?? "");
}

/** axe-core on the page as it is now: no serious or critical violation. */
export async function expectAccessible(page: Page, what: string) {
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect({ page: what, violations: bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`) }).toEqual({
    page: what,
    violations: [],
  });
}

/** Errors the page reported (a refused script or style under the CSP shows up here). */
export function watchConsoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  return errors;
}
