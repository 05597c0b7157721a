import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sendThroughProvider } from "../../device-sim/provider";
import { randomSimNumber } from "../fixtures-devices";
import { eventually } from "../fixtures-numbers";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, expectAccessible, newContext, signIn, startConsoleWorld, stopConsoleWorld, tokenOf } from "./console-helpers";

/**
 * Devices journey: register a phone in the console, verify its SIM by texting the code shown
 * (through the provider emulator), watch it come online and go offline live, disable, enable
 * and revoke it; a member sees no revoke button and the API refuses it anyway.
 */
warnIfNoChromium("console devices journey");

let w: ConsoleWorld;
beforeAll(async () => {
  w = await startConsoleWorld({ HEARTBEAT_SECONDS: "1", OFFLINE_AFTER_SECONDS: "2", DOZE_OFFLINE_AFTER_SECONDS: "4" });
}, 60_000);
afterAll(() => stopConsoleWorld(w));

describe.skipIf(!CHROMIUM)("devices", () => {
  test("register, verify live, online then offline live, disable, enable, revoke", async () => {
    const { user, orgId } = await createMember(w.ctx.sql, { role: "admin" });
    const context = await newContext(w);
    const page = await context.newPage();
    page.on("dialog", (d) => d.accept());
    await signIn(page, user.email, undefined, "/devices");
    await page.getByText("No phones yet.").waitFor();
    await expectAccessible(page, "devices (empty)");

    await page.getByRole("button", { name: "Register a phone" }).click();
    const firstAndroidId = await page.getByLabel("Android ID").inputValue();
    await page.getByLabel("Name").fill("QA Pixel");
    await page.getByRole("button", { name: "Register", exact: true }).click();
    const codes = page.getByRole("region", { name: "Verify the SIM cards" });
    await codes.waitFor();
    const first = (await codes.locator("mark").textContent())!.trim();
    expect(await codes.textContent()).toContain(w.ctx.config.PROVIDER_NUMBER);
    await codes.getByText(/left$/).waitFor(); // the code's countdown
    const card = page.locator("li.card", { hasText: "QA Pixel" });
    await card.getByText("pending_verification").waitFor();
    // Not verified yet: the API refuses to disable it, so the card does not offer it.
    await card.getByRole("button", { name: "Revoke" }).waitFor();
    expect(await card.getByRole("button", { name: "Disable" }).count()).toBe(0);
    // The form opened again suggests another Android ID (the first one is taken now).
    await page.getByRole("button", { name: "Register a phone" }).click();
    const secondAndroidId = await page.getByLabel("Android ID").inputValue();
    expect(secondAndroidId).toMatch(/^[0-9a-f]{16}$/);
    expect(secondAndroidId).not.toBe(firstAndroidId);
    await expectAccessible(page, "devices (codes)");
    // A new code replaces the first, which stops working.
    await card.getByRole("button", { name: "Reissue code" }).click();
    await eventually(async () => (await codes.locator("mark").textContent())!.trim() !== first, 5000, "a new code");
    const code = (await codes.locator("mark").textContent())!.trim();

    // The phone texts its code to the provider number: the card turns active on screen.
    const simNumber = randomSimNumber();
    await sendThroughProvider(w.provider.url, { from: simNumber, to: w.ctx.config.PROVIDER_NUMBER, body: `Verify ${code}` });
    await card.getByText(simNumber).waitFor({ timeout: 15_000 });
    await card.getByText("active", { exact: false }).first().waitFor();

    // A heartbeat: online with its battery, live; then silence: offline, live.
    const [row] = await w.ctx.sql<{ id: number }[]>`select id from devices where organization_id = ${orgId}`;
    const deviceId = row!.id;
    const token = await tokenOf(page);
    const beat = await fetch(`${w.base}/api/byos/devices/${deviceId}/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ battery_level: 77, signal_strength: 3 }),
    });
    expect(beat.status).toBe(200);
    await card.getByText("Online", { exact: true }).waitFor({ timeout: 15_000 });
    await card.getByText(/Battery 77%/).waitFor();
    await card.getByText("Offline", { exact: true }).waitFor({ timeout: 10_000 });

    await card.getByRole("button", { name: "Disable" }).click();
    await card.getByRole("button", { name: "Enable" }).waitFor();
    await card.getByText("disabled").waitFor();
    await card.getByRole("button", { name: "Enable" }).click();
    await card.getByRole("button", { name: "Disable" }).waitFor();
    await card.getByRole("button", { name: "Revoke" }).click();
    await card.getByText("revoked").waitFor();
    expect(await card.getByRole("button").count()).toBe(0);
    await context.close();
  }, 90_000);

  test("a member is not offered revoke, and the API refuses it", async () => {
    const admin = await createMember(w.ctx.sql, { role: "owner" });
    const member = await createMember(w.ctx.sql, { role: "member", orgId: admin.orgId });
    const [device] = await w.ctx.sql<{ id: number }[]>`
      insert into devices (organization_id, android_id, device_model, app_version, status, device_name)
      values (${admin.orgId}, ${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}, 'Pixel 8', '1.0.0', 'active', 'Shared phone') returning id`;
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, member.user.email, undefined, "/devices");
    const card = page.locator("li.card", { hasText: "Shared phone" });
    await card.getByRole("button", { name: "Disable" }).waitFor();
    expect(await card.getByRole("button", { name: "Revoke" }).count()).toBe(0);
    const refused = await fetch(`${w.base}/api/byos/devices/${device!.id}`, { method: "DELETE", headers: { authorization: `Bearer ${await tokenOf(page)}` } });
    expect(refused.status).toBe(403);
    await context.close();
  }, 60_000);
});
