import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, sessionFor } from "../fixtures";
import { attachNumber, createPoolNumber, createTeam, receiveSms } from "../fixtures-numbers";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, expectAccessible, newContext, signIn, startConsoleWorld, stopConsoleWorld } from "./console-helpers";

/** Issue 18 "usable on a 375 px wide phone screen": every page, with data on it, fits the width and passes axe. */
warnIfNoChromium("console at 375 px");

let w: ConsoleWorld;
beforeAll(async () => {
  w = await startConsoleWorld();
}, 60_000);
afterAll(() => stopConsoleWorld(w));

describe.skipIf(!CHROMIUM)("console on a phone", () => {
  test("every page at 375 px: no horizontal scrolling, no serious or critical axe violation", async () => {
    const { user, orgId } = await createMember(w.ctx.sql);
    const team = await createTeam(w.ctx.sql, orgId, "Checkout with a rather long team name");
    const sim = await createPoolNumber(w.ctx.sql);
    await attachNumber(w.ctx.sql, sim.id, orgId, { alias: "signup tests", teamId: team.id });
    await receiveSms(w.ctx.sql, sim.id, { from: "+15550009999", text: `A long message without spaces ${"x".repeat(120)} and code 123456` });
    await createApiKey(w.ctx.sql, orgId, ["numbers.read", "messages.read", "numbers.lock", "webhooks.receive"]);
    const token = await sessionFor(w.ctx.sql, user.id);
    const hook = await fetch(`${w.base}/api/webhook-integrations`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "CI receiver", url: `https://ci.example.test/hooks/${"long-path/".repeat(8)}sms` }),
    });
    expect(hook.status).toBe(201);

    const context = await newContext(w, 375);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/numbers");
    for (const [path, text] of [
      ["/numbers", "signup tests"],
      ["/inbox", "123456"],
      ["/devices", "No phones yet."],
      ["/webhooks", "CI receiver"],
      ["/api-keys", "test key"],
      ["/teams", "Checkout with a rather long team name"],
      ["/plan", "Messages sent in"],
      ["/account", "Active sessions"],
    ] as const) {
      await page.goto(path);
      await page.getByText(text).first().waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect({ path, overflow }).toEqual({ path, overflow: 0 });
      await expectAccessible(page, `${path} at 375 px`);
    }
    await context.close();
  }, 120_000);
});
