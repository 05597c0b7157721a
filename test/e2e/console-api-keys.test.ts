import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, expectAccessible, newContext, signIn, startConsoleWorld, stopConsoleWorld, tokenOf } from "./console-helpers";

/** API keys journey: create with permissions (shown once), use it, regenerate, delete; members are not offered any of it. */
warnIfNoChromium("console API keys journey");

let w: ConsoleWorld;
beforeAll(async () => {
  w = await startConsoleWorld();
}, 60_000);
afterAll(() => stopConsoleWorld(w));

const me = (key: string) => fetch(`${w.base}/api/numbers`, { headers: { authorization: `Bearer ${key}` } });

describe.skipIf(!CHROMIUM)("API keys", () => {
  test("create with permissions, shown once and copied; last used; regenerate; delete", async () => {
    const { user } = await createMember(w.ctx.sql, { role: "admin" });
    const context = await newContext(w);
    const page = await context.newPage();
    page.on("dialog", (d) => d.accept());
    await signIn(page, user.email, undefined, "/api-keys");
    await page.getByText("No API keys yet.", { exact: false }).waitFor();
    await expectAccessible(page, "API keys");

    await page.getByLabel("Key name").fill("CI signup tests");
    await page.getByLabel(/Lock and unlock numbers/).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const key = (await page.getByTestId("plain-key").textContent())!.trim();
    await page.getByRole("button", { name: "Copy the key" }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    const row = page.getByRole("row", { name: /CI signup tests/ });
    await row.waitFor();
    const permissions = (await row.locator("td").nth(2).textContent())!.split(", ").sort();
    expect(permissions).toEqual(["messages.read", "numbers.lock", "numbers.read"]);
    await row.getByText("never").waitFor();
    expect((await me(key)).status).toBe(200);
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.getByTestId("plain-key").count()).toBe(0); // shown once: gone once dismissed
    await page.reload();
    await row.getByText("never").waitFor({ state: "detached" }); // now used

    await row.getByRole("button", { name: "Regenerate CI signup tests" }).click();
    const again = (await page.getByTestId("plain-key").textContent())!.trim();
    expect(again).not.toBe(key);
    expect((await me(key)).status).toBe(401);
    expect((await me(again)).status).toBe(200);

    await row.getByRole("button", { name: "Delete CI signup tests" }).click();
    await row.waitFor({ state: "detached" });
    expect((await me(again)).status).toBe(401);
    await context.close();
  }, 60_000);

  test("a member sees no key management, and the API refuses it", async () => {
    const owner = await createMember(w.ctx.sql);
    const member = await createMember(w.ctx.sql, { role: "member", orgId: owner.orgId });
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, member.user.email, undefined, "/api-keys");
    await page.getByText("Only owners and admins of the organization manage API keys.", { exact: false }).waitFor();
    expect(await page.getByRole("button", { name: "Create key" }).count()).toBe(0);
    const refused = await fetch(`${w.base}/api/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${await tokenOf(page)}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "sneaky", permissions: ["numbers.read"] }),
    });
    expect(refused.status).toBe(403);
    await expectAccessible(page, "API keys (member)");
    await context.close();
  }, 60_000);
});
