import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sendThroughProvider } from "../../device-sim/provider";
import { createAdmin } from "../../server/admin/operations";
import { createOrg, sessionFor } from "../fixtures";
import { createSharedNumber, createTeam, eventually, receiveSms } from "../fixtures-numbers";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, newContext, signIn, startConsoleWorld, stopConsoleWorld, tokenOf } from "./console-helpers";

/**
 * What an open console keeps true while the world changes around it: a session revoked elsewhere,
 * a number gained, another tab signing out, another organization chosen; and what it shows of
 * data others wrote (a sender's right-to-left override, names of one long word).
 */
warnIfNoChromium("console while open");

let w: ConsoleWorld;
beforeAll(async () => {
  w = await startConsoleWorld();
}, 60_000);
afterAll(() => stopConsoleWorld(w));

const status = async (token: string) => (await fetch(`${w.base}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status;

describe.skipIf(!CHROMIUM)("an open console", () => {
  test("a session revoked elsewhere: the tab goes back to sign-in, not 'Reconnecting…' for good", async () => {
    const { orgId, user } = await createMember(w.ctx.sql);
    await createSharedNumber(w.ctx.sql, [orgId]);
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/inbox");
    await page.getByText("Live", { exact: true }).waitFor();
    const mine = await tokenOf(page);
    // Signed out from another device: the server ends this tab's realtime connection (4009).
    const elsewhere = await sessionFor(w.ctx.sql, user.id);
    const sessions = (await (await fetch(`${w.base}/api/auth/sessions`, { headers: { authorization: `Bearer ${elsewhere}` } })).json()) as {
      data: { id: number; current: boolean }[];
    };
    const target = sessions.data.find((s) => !s.current)!;
    await fetch(`${w.base}/api/auth/sessions/${target.id}`, { method: "DELETE", headers: { authorization: `Bearer ${elsewhere}` } });
    expect(await status(mine)).toBe(401);
    await page.getByRole("button", { name: "Sign in" }).waitFor({ timeout: 15_000 });
    expect(await page.evaluate(() => sessionStorage.getItem("simhost.token"))).toBeNull();
    await context.close();
  }, 60_000);

  test("all numbers: a message to a number the organization gained after the page loaded shows live", async () => {
    const { orgId, user } = await createMember(w.ctx.sql);
    const first = await createSharedNumber(w.ctx.sql, [orgId]);
    await receiveSms(w.ctx.sql, first.id, { text: "before the page" });
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/inbox");
    const messages = page.getByRole("list", { name: "Messages" });
    await messages.getByText("before the page").waitFor();
    await page.getByText("Live", { exact: true }).waitFor();
    const gained = await createSharedNumber(w.ctx.sql, [orgId]);
    await sendThroughProvider(w.provider.url, { from: "+15550003333", to: gained.number, body: "Your code is 654321" });
    await messages.getByText("654321", { exact: true }).waitFor({ timeout: 10_000 });
    await context.close();
  }, 60_000);

  test("another organization chosen on a number's inbox shows all of its numbers, not 'Number not found'", async () => {
    const { orgId, user } = await createMember(w.ctx.sql, { orgName: "Alpha inbox" });
    const { orgId: otherId } = await createMember(w.ctx.sql, { orgName: "Bravo inbox" });
    await w.ctx.sql`insert into memberships (user_id, organization_id, role) values (${user.id}, ${otherId}, 'owner')`;
    const alpha = await createSharedNumber(w.ctx.sql, [orgId]);
    const bravo = await createSharedNumber(w.ctx.sql, [otherId]);
    await receiveSms(w.ctx.sql, bravo.id, { text: "bravo's message" });
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, `/inbox?number=${alpha.id}`);
    await page.getByLabel("Organization").selectOption({ label: "Alpha inbox" });
    await page.getByLabel("Number").selectOption(String(alpha.id));
    await page.getByLabel("Organization").selectOption({ label: "Bravo inbox" });
    await page.getByRole("list", { name: "Messages" }).getByText("bravo's message").waitFor();
    expect(await page.getByText("Number not found.").count()).toBe(0);
    expect(new URL(page.url()).search).toBe("");
    await context.close();
  }, 60_000);

  test("removed from the organization on view: the console goes back to one the user still belongs to, not 'Organization not found.' on every page", async () => {
    const { orgId, user } = await createMember(w.ctx.sql, { orgName: "Staying org" });
    const { orgId: leftId } = await createMember(w.ctx.sql, { orgName: "Leaving org" });
    await w.ctx.sql`insert into memberships (user_id, organization_id, role) values (${user.id}, ${leftId}, 'admin')`;
    const stays = await createSharedNumber(w.ctx.sql, [orgId]);
    const leaves = await createSharedNumber(w.ctx.sql, [leftId]);
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/numbers");
    await page.getByLabel("Organization").selectOption({ label: "Leaving org" });
    await page.getByRole("list", { name: "Numbers" }).getByText(leaves.number).waitFor();
    await createAdmin({ sql: w.ctx.services.sql, change: w.ctx.services.auth.change }).removeUser(leftId, user.email);
    await page.getByRole("link", { name: "Teams" }).click();
    await page.getByRole("link", { name: "Numbers" }).click();
    await page.getByRole("list", { name: "Numbers" }).getByText(stays.number).waitFor({ timeout: 15_000 });
    expect(await page.getByText("Organization not found.").count()).toBe(0);
    // One organization left: no switcher.
    expect(await page.getByLabel("Organization").count()).toBe(0);
    // And live again: the server ended the connection (4009, the left organization's grant); a
    // new one carries the staying organization's events (it stayed "Disconnected" until a reload).
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Inbox" }).click();
    await page.getByText("Live", { exact: true }).waitFor({ timeout: 15_000 });
    await sendThroughProvider(w.provider.url, { from: "+15550004444", to: stays.number, body: "still live 771203" });
    await page.getByRole("list", { name: "Messages" }).getByText("still live 771203", { exact: false }).waitFor({ timeout: 15_000 });
    await context.close();
  }, 60_000);

  test("removed from every organization: the console says so and still signs out, ending the token", async () => {
    const { orgId } = await createMember(w.ctx.sql, { orgName: "Only org" });
    const { user } = await createMember(w.ctx.sql, { orgId, role: "member" });
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/numbers");
    const mine = await tokenOf(page);
    await createAdmin({ sql: w.ctx.services.sql, change: w.ctx.services.auth.change }).removeUser(orgId, user.email);
    await page.reload();
    await page.getByRole("alert").getByText("not a member of any organization", { exact: false }).waitFor();
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    expect(await status(mine)).toBe(401);
    await context.close();
  }, 60_000);

  test("signing out in one tab ends the other tabs' own sessions on the server too", async () => {
    const { user } = await createMember(w.ctx.sql);
    const context = await newContext(w);
    const a = await context.newPage();
    await signIn(a, user.email);
    const b = await context.newPage();
    await signIn(b, user.email);
    const [ta, tb] = [await tokenOf(a), await tokenOf(b)];
    expect(ta).not.toBe(tb);
    await a.getByRole("button", { name: "Sign out", exact: true }).click();
    await b.getByRole("button", { name: "Sign in" }).waitFor();
    expect(await status(ta)).toBe(401);
    await eventually(async () => (await status(tb)) === 401, 10_000, "the other tab's session ended on the server");
    await context.close();
  }, 60_000);

  test("a copy the clipboard refuses says so; the devices page lists every device, past the first hundred", async () => {
    const { orgId, user } = await createMember(w.ctx.sql);
    const sim = await createSharedNumber(w.ctx.sql, [orgId]);
    await receiveSms(w.ctx.sql, sim.id, { text: "Your code is 424242" });
    await w.ctx.sql`
      insert into devices (organization_id, android_id, device_model, app_version, status, device_name)
      select ${orgId}, 'a' || lpad(to_hex(n), 15, '0'), 'Pixel 8', '1.0.0', 'active', 'phone-' || lpad(n::text, 3, '0') from generate_series(1, 105) n`;
    const context = await newContext(w);
    const page = await context.newPage();
    await page.addInitScript(() => {
      navigator.clipboard.writeText = () => Promise.reject(new DOMException("denied", "NotAllowedError"));
    });
    await signIn(page, user.email, undefined, "/inbox");
    await page.getByRole("button", { name: "Copy code 424242" }).click();
    await page.getByText("Copy failed: select the code").waitFor();
    expect(await page.getByText("Copied", { exact: true }).count()).toBe(0);
    await page.goto("/devices");
    await page.getByText("phone-105").waitFor();
    await context.close();
  }, 60_000);

  test("data others wrote: a sender's right-to-left override stays inside it; one-word names and a long organization name do not widen a phone's page", async () => {
    const { orgId, user } = await createMember(w.ctx.sql);
    const sim = await createSharedNumber(w.ctx.sql, [orgId]);
    await receiveSms(w.ctx.sql, sim.id, { from: "+1555\u202Eevil", text: "sender with an override" });
    await createTeam(w.ctx.sql, orgId, "W".repeat(200));
    // A second organization with a long name: the switcher shows it in a select.
    const long = await createOrg(w.ctx.sql, { name: `Organization ${"O".repeat(120)}` });
    await w.ctx.sql`insert into memberships (user_id, organization_id, role) values (${user.id}, ${long.id}, 'member')`;
    const context = await newContext(w, 375);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/inbox");
    await page.getByText("sender with an override").waitFor();
    const sender = page.locator(".mono", { hasText: "evil" }).first();
    expect(await sender.evaluate((el) => getComputedStyle(el).unicodeBidi)).toBe("isolate");
    await page.getByLabel("Organization").waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.goto("/teams");
    await page.getByText("W".repeat(20), { exact: false }).first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await context.close();
  }, 60_000);
});
