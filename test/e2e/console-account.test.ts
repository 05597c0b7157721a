import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generate } from "otplib";
import { sessionFor, TEST_PASSWORD } from "../fixtures";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, expectAccessible, newContext, signIn, startConsoleWorld, stopConsoleWorld } from "./console-helpers";

/**
 * Account journey: turn two-factor on with a QR code drawn in the browser, then off (signing in
 * with it: console-inbox.test.ts); sessions signed out one by one and by a password change; the
 * plan usage page.
 */
warnIfNoChromium("console account journey");

let w: ConsoleWorld;
beforeAll(async () => {
  w = await startConsoleWorld();
}, 60_000);
afterAll(() => stopConsoleWorld(w));

const step = (offset: number) => Math.floor(Date.now() / 1000) + offset * 30;

describe.skipIf(!CHROMIUM)("account", () => {
  test("two-factor on (QR code rendered locally), a wrong code refused with the API's message, two-factor off", async () => {
    const { user } = await createMember(w.ctx.sql, { role: "member" });
    const context = await newContext(w);
    const page = await context.newPage();
    const requested: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    await signIn(page, user.email, undefined, "/account");
    await page.getByText("Off: signing in needs only your password.").waitFor();
    await page.getByRole("button", { name: "Set up two-factor authentication" }).click();
    const qr = page.getByRole("img", { name: /QR code of your two-factor key/ });
    await qr.waitFor();
    expect(await qr.getAttribute("src")).toStartWith("data:image/png;base64,");
    const secret = (await page.getByTestId("totp-secret").textContent())!.trim();
    await expectAccessible(page, "account (two-factor setup)");
    await page.getByLabel("Code from your authenticator app").fill(await generate({ secret, epoch: step(0) }));
    await page.getByRole("button", { name: "Turn on two-factor" }).click();
    await page.getByText("On: signing in asks for a code", { exact: false }).waitFor();
    // Away and back: the page still says on (the shell's identity took the answer's user).
    await page.getByRole("link", { name: "Plan" }).click();
    await page.getByRole("link", { name: "Account" }).click();
    await page.getByText("On: signing in asks for a code", { exact: false }).waitFor();
    expect(requested.filter((u) => !u.startsWith("data:") && new URL(u).origin !== w.base)).toEqual([]);

    const on = async () => (await w.ctx.sql<{ on: boolean }[]>`select totp_enabled as on from users where id = ${user.id}`)[0]!.on;
    expect(await on()).toBe(true);
    // A wrong code: the API's message, still on.
    await page.getByLabel("Code to turn two-factor off").fill("000000");
    await page.getByRole("button", { name: "Turn off two-factor" }).click();
    await page.getByRole("alert").getByText("The two-factor code is wrong", { exact: false }).waitFor();
    await page.getByLabel("Code to turn two-factor off").fill(await generate({ secret, epoch: step(1) }));
    await page.getByRole("button", { name: "Turn off two-factor" }).click();
    await page.getByText("Off: signing in needs only your password.").waitFor();
    expect(await on()).toBe(false);
    await page.getByRole("link", { name: "Plan" }).click();
    await page.getByRole("link", { name: "Account" }).click();
    await page.getByRole("button", { name: "Set up two-factor authentication" }).waitFor();
    expect(await page.getByText("Off: signing in needs only your password.").count()).toBe(1);
    await context.close();
  }, 90_000);

  test("sessions: another one signed out from the list; a password change (wrong current password refused) signs out the rest", async () => {
    const { user } = await createMember(w.ctx.sql, { role: "member" });
    const phone = await sessionFor(w.ctx.sql, user.id);
    const laptop = await sessionFor(w.ctx.sql, user.id);
    const works = async (token: string) => (await fetch(`${w.base}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status === 200;
    const context = await newContext(w, 375);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/account");
    const sessions = page.getByRole("list", { name: "Active sessions" });
    await sessions.getByRole("listitem").nth(2).waitFor();
    expect(await sessions.getByRole("listitem").count()).toBe(3);
    await expectAccessible(page, "account (sessions, 375 px)");
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);

    const phoneId = (await w.ctx.sql<{ id: number }[]>`select id from sessions where user_id = ${user.id} order by id limit 1`)[0]!.id;
    await page.getByRole("button", { name: `Sign out session ${phoneId}` }).click();
    await page.getByRole("button", { name: "Sign out all other sessions (1)" }).waitFor();
    expect(await works(phone)).toBe(false);
    expect(await works(laptop)).toBe(true);

    await page.getByLabel("Current password").fill("not my password");
    await page.getByLabel("New password").fill("a brand new password");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByRole("alert").getByText("The current password is incorrect.").waitFor();
    expect(await works(laptop)).toBe(true);
    await page.getByLabel("Current password").fill(TEST_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Password changed. 1 other session was signed out").waitFor();
    expect(await works(laptop)).toBe(false);
    // The list loads again: only this browser is left.
    await page.getByText("No other sessions: only this browser is signed in.").waitFor();
    expect(await sessions.getByRole("listitem").count()).toBe(1);
    const signIn2 = await fetch(`${w.base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: user.email, password: "a brand new password" }),
    });
    expect(signIn2.status).toBe(200);
    // This browser stays signed in.
    await page.reload();
    await page.getByRole("button", { name: "Sign out", exact: true }).waitFor();
    await context.close();
  }, 90_000);

  test("plan usage: devices and this month's messages against the plan's limits, at 375 px", async () => {
    const { user, orgId } = await createMember(w.ctx.sql, { role: "member" });
    await w.ctx.sql`update organizations set plan = 'pro' where id = ${orgId}`;
    const context = await newContext(w, 375);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/plan");
    await page.getByRole("heading", { name: "Devices" }).waitFor();
    expect(await page.getByText("0 of 25 used").count()).toBe(1);
    expect(await page.getByText("0 of 10000 used").count()).toBe(1);
    expect(await page.getByRole("meter").count()).toBe(2);
    await expectAccessible(page, "plan usage (375 px)");
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await context.close();
  }, 90_000);
});
