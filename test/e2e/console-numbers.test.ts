import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { WebSocketRoute } from "playwright-core";
import { sendThroughProvider } from "../../device-sim/provider";
import { storeInboundMessages } from "../../server/messages/inbound";
import { attachNumber, createByosNumber, createPoolNumber, createTeam, eventually } from "../fixtures-numbers";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, expectAccessible, newContext, signIn, startConsoleWorld, stopConsoleWorld, tokenOf } from "./console-helpers";

/**
 * Numbers journey (order, lock with its countdown, unlock, alias, a lock taken elsewhere shown
 * live) and the inbox over a long history (pages as it scrolls) and across a dropped connection
 * (what arrived meanwhile shows once it is back).
 */
warnIfNoChromium("console numbers journey");

let w: ConsoleWorld;
beforeAll(async () => {
  w = await startConsoleWorld();
}, 60_000);
afterAll(() => stopConsoleWorld(w));

/** `count` inbound messages on a number, stored as the server stores them, oldest first. */
async function history(hostedSimId: number, count: number) {
  const start = Date.now() - count * 1000;
  const inputs = Array.from({ length: count }, (_, i) => ({
    hostedSimId,
    from: "+15550004444",
    text: `history message ${i + 1}`,
    source: "provider" as const,
    externalId: `SMhist${hostedSimId}x${i}`,
    receivedAt: new Date(start + i * 1000),
  }));
  for (let i = 0; i < inputs.length; i += 500) await w.ctx.sql.begin((tx) => storeInboundMessages(tx, inputs.slice(i, i + 500)));
  // Their fan-out (events nobody listens to yet) is done before the page opens.
  await eventually(
    async () => Number((await w.ctx.sql`select count(*)::int as n from jobs where queue = 'message.inbound'`)[0]!.n) === 0,
    30_000,
    "fan-out drained",
  );
}

describe.skipIf(!CHROMIUM)("numbers and the inbox's history", () => {
  test("order from the pool, lock with a countdown, unlock, alias, lock until the next SMS, a phone's number to a team; a lock taken elsewhere shows live", async () => {
    const { user, orgId } = await createMember(w.ctx.sql, { role: "admin" });
    const pool = await createPoolNumber(w.ctx.sql);
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/numbers");
    await page.getByText("No numbers yet.").waitFor();
    await expectAccessible(page, "numbers (empty)");

    // The pool may hold other tests' numbers: ours is the only one left free by them.
    await w.ctx
      .sql`update hosted_sims set status = 'inactive' where type = 'shared' and id <> ${pool.id} and id not in (select hosted_sim_id from hosted_sim_organizations)`;
    await page.getByRole("button", { name: "Order a number from the pool" }).click();
    const card = page.locator("li.card", { hasText: pool.number });
    await card.waitFor();
    await card.getByText("Unlocked").waitFor();

    await card.getByRole("button", { name: `Lock ${pool.number} for 10 minutes` }).click();
    await card.getByText(/Locked by your organization, (9:5\d|10:00) left/).waitFor();
    await expectAccessible(page, "numbers (locked)");
    await card.getByRole("button", { name: `Unlock ${pool.number}` }).click();
    await card.getByText("Unlocked").waitFor();

    await card.getByRole("button", { name: `Edit the alias of ${pool.number}` }).click();
    await page.getByLabel(`Alias for ${pool.number}`).fill("checkout flow");
    await page.getByRole("button", { name: "Save" }).click();
    await card.getByText("checkout flow").waitFor();

    // Locked until its next SMS: the SMS (through the provider emulator) releases it, live.
    await card.getByRole("button", { name: `Lock until next SMS: ${pool.number}` }).click();
    await card.getByText(/until the next message/).waitFor();
    await sendThroughProvider(w.provider.url, { from: "+15550003333", to: pool.number, body: "Your code is 123456" });
    await card.getByText("Unlocked").waitFor({ timeout: 5000 });

    // A verified number of one of the organization's phones goes to a team.
    const team = await createTeam(w.ctx.sql, orgId, "Checkout");
    const byos = await createByosNumber(w.ctx.sql, orgId);
    await page.reload();
    const phone = page.locator("li.card", { hasText: byos.number });
    // The one SMS it received: "1 message", singular.
    await card.getByText(/ 1 message(?!s)/).waitFor();
    await phone.getByLabel(`Team of ${byos.number}`).selectOption({ label: team.name });
    await phone.getByRole("button", { name: "Assign" }).click();
    await phone.getByText("team Checkout").waitFor();

    // Another client of the organization (the API with the same account) locks it: live here.
    const locked = await fetch(`${w.base}/api/numbers/${pool.id}/lock`, {
      method: "POST",
      headers: { authorization: `Bearer ${await tokenOf(page)}`, "content-type": "application/json" },
      body: JSON.stringify({ duration_seconds: 120 }),
    });
    expect(locked.status).toBe(200);
    await card.getByText(/Locked by your organization, (1:5\d|2:00) left/).waitFor({ timeout: 5000 });
    await context.close();
  }, 60_000);

  test("a long history loads page by page as it scrolls; a message received while disconnected shows after the reconnect", async () => {
    const { user, orgId } = await createMember(w.ctx.sql);
    const sim = await createPoolNumber(w.ctx.sql);
    await attachNumber(w.ctx.sql, sim.id, orgId);
    await history(sim.id, 130);

    const context = await newContext(w);
    const page = await context.newPage();
    // The realtime connection goes through a route the test can cut.
    let down = false;
    let current: WebSocketRoute | null = null;
    await page.routeWebSocket(/\/app\//, (ws) => {
      if (down) return ws.close();
      current = ws;
      ws.connectToServer();
    });
    await signIn(page, user.email, undefined, `/inbox?number=${sim.id}`);
    const messages = page.getByRole("list", { name: "Messages" });
    await messages.getByText("history message 130", { exact: true }).waitFor();
    await page.getByText("130 messages").waitFor();
    const pagesFetched: number[] = [];
    page.on("request", (r) => {
      const url = new URL(r.url());
      if (url.pathname === "/api/messages") pagesFetched.push(Number(url.searchParams.get("page")));
    });
    // Scrolling to the end loads older pages, one at a time; the list renders only the rows in view.
    const scroller = page.getByRole("region", { name: "Messages, scroll for older ones" });
    await eventually(
      async () => {
        await scroller.evaluate((el) => {
          el.scrollTop = el.scrollHeight;
        });
        return (await messages.getByText("history message 1", { exact: true }).count()) === 1;
      },
      20_000,
      "the oldest message",
    );
    expect(pagesFetched.filter((p) => p > 1).sort()).toEqual([2, 3]);
    expect(await messages.locator("li.message").count()).toBeLessThan(50);
    await scroller.evaluate((el) => {
      el.scrollTop = 0;
    });
    await messages.getByText("history message 130", { exact: true }).waitFor();

    // Cut the connection; a code arrives meanwhile; the connection comes back and the code shows.
    await page.getByText("Live", { exact: true }).waitFor();
    down = true;
    await current!.close();
    await page.getByText("Reconnecting…").waitFor();
    await sendThroughProvider(w.provider.url, { from: "+15550008888", to: sim.number, body: "Missed code 771122" });
    await eventually(async () => (await w.ctx.sql`select count(*)::int as n from messages where text = 'Missed code 771122'`)[0]!.n === 1, 5000, "stored");
    down = false;
    await messages.getByText("771122", { exact: true }).waitFor({ timeout: 30_000 });
    await page.getByText("Live", { exact: true }).waitFor();
    await context.close();
  }, 90_000);
});
