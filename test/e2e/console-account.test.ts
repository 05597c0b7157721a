import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generate } from "otplib";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, expectAccessible, newContext, signIn, startConsoleWorld, stopConsoleWorld } from "./console-helpers";

/** Account journey: turn two-factor on with a QR code drawn in the browser, then off (signing in with it: console-inbox.test.ts). */
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
    await context.close();
  }, 90_000);
});
