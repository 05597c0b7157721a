import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { appendEvents } from "../../server/events/log";
import { createUser } from "../fixtures";
import { eventually } from "../fixtures-numbers";
import { CHROMIUM, warnIfNoChromium } from "./browser";
import { type ConsoleWorld, createMember, expectAccessible, newContext, signIn, startConsoleWorld, stopConsoleWorld, tokenOf } from "./console-helpers";

/**
 * Teams and webhooks journeys: a team with a member, a webhook whose secret (shown once) verifies
 * the test delivery a local receiver gets, mapped to the team, its delivery log, a rotated
 * secret that verifies the next test, edit and delete; event types chosen on create and edit, a
 * log record redelivered under the same webhook-id, a window replayed.
 */
warnIfNoChromium("console teams and webhooks journeys");

let w: ConsoleWorld;
const received: { headers: Record<string, string>; body: string }[] = [];
let receiver: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  w = await startConsoleWorld();
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      received.push({ headers: Object.fromEntries(req.headers), body: await req.text() });
      return new Response("thanks");
    },
  });
}, 60_000);
afterAll(async () => {
  receiver?.stop(true);
  await stopConsoleWorld(w);
});

const verifies = (secret: string, delivery: { headers: Record<string, string>; body: string }) => {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(!CHROMIUM)("teams and webhooks", () => {
  test("a team with a member; a webhook created, mapped, tested (signature verified), logged, rotated, edited, deleted", async () => {
    const { user, orgId } = await createMember(w.ctx.sql, { role: "owner" });
    const colleague = await createUser(w.ctx.sql, { orgId, role: "member" });
    const context = await newContext(w);
    const page = await context.newPage();
    page.on("dialog", (d) => d.accept());

    await signIn(page, user.email, undefined, "/teams");
    await page.getByText("No teams yet.", { exact: false }).waitFor();
    await page.getByLabel("New team name").fill("QA");
    await page.getByRole("button", { name: "Create team" }).click();
    const team = page.locator("li.card", { hasText: "QA" });
    await team.getByLabel("Add a member of the organization to QA by email").fill(colleague.email);
    await team.getByRole("button", { name: "Add", exact: true }).click();
    await team.getByText(colleague.email, { exact: false }).waitFor();
    await expectAccessible(page, "teams");

    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByText("No webhooks yet.", { exact: false }).waitFor();
    await page.getByLabel("Webhook name").fill("CI receiver");
    await page.getByLabel("URL").fill(`http://127.0.0.1:${receiver.port}/hooks`);
    await page.getByRole("button", { name: "Create webhook" }).click();
    const secret = (await page.getByTestId("webhook-secret").textContent())!.trim();
    expect(secret).toStartWith("whsec_");
    await page.getByRole("button", { name: "Done" }).click();
    const hook = page.locator("li.card", { hasText: "CI receiver" });
    await hook.getByText("Not mapped to any team", { exact: false }).waitFor();
    await hook.getByRole("button", { name: "Map team" }).click();
    await hook.getByRole("list", { name: "Teams of CI receiver" }).getByText("QA (every message)", { exact: false }).waitFor();
    // The team just mapped leaves the choice; what the select shows is what Map team maps next.
    await w.ctx.sql`insert into teams (organization_id, name) values (${orgId}, 'Ops')`;
    await page.reload();
    const teamChoice = hook.locator("select[id^='team-']");
    await teamChoice.waitFor();
    expect(await teamChoice.evaluate((s: HTMLSelectElement) => s.selectedOptions[0]?.textContent ?? "")).toBe("Ops");
    await expectAccessible(page, "webhooks");

    await hook.getByRole("button", { name: "Send a test" }).click();
    await hook.getByText(/Test delivered: HTTP 200/).waitFor();
    expect(received.length).toBe(1);
    expect(verifies(secret, received[0]!)).toBe(true);
    await hook.getByRole("button", { name: "Deliveries" }).click();
    await hook.getByRole("table").waitFor();
    expect(await hook.getByRole("table").textContent()).toContain("HTTP 200");

    await hook.getByRole("button", { name: "Rotate secret" }).click();
    const rotated = (await page.getByTestId("webhook-secret").textContent())!.trim();
    expect(rotated).not.toBe(secret);
    await page.getByRole("button", { name: "Done" }).click();
    await hook.getByRole("button", { name: "Send a test" }).click();
    await eventually(() => received.length === 2, 10_000, "second test delivery");
    await hook.getByText(/Test delivered: HTTP 200/).waitFor();
    // The open delivery log loads again: the second test is in it.
    await eventually(async () => (await hook.getByRole("table").locator("tbody tr").count()) === 2, 10_000, "the second test in the open log");
    const last = received.at(-1)!;
    expect(verifies(rotated, last)).toBe(true);
    expect(verifies(secret, last)).toBe(false);

    await hook.getByRole("button", { name: "Edit" }).click();
    await hook.getByLabel("Webhook name").fill("CI receiver v2");
    await hook.getByRole("button", { name: "Save" }).click();
    const renamed = page.locator("li.card", { hasText: "CI receiver v2" });
    await renamed.waitFor();
    await renamed.getByRole("button", { name: "Delete" }).click();
    await renamed.waitFor({ state: "detached" });
    await page.getByText("No webhooks yet.", { exact: false }).waitFor();
    await context.close();
  }, 90_000);

  test("event types chosen on create and edit; a log record redelivered under the same webhook-id; a window replayed", async () => {
    const { user, orgId } = await createMember(w.ctx.sql, { role: "owner" });
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, user.email, undefined, "/webhooks");
    await page.getByText("No webhooks yet.", { exact: false }).waitFor();
    await page.getByLabel("Webhook name").fill("Devices");
    await page.getByLabel("URL").fill(`http://127.0.0.1:${receiver.port}/devices`);
    const create = page.getByRole("form", { name: "Create a webhook" });
    expect(await create.getByRole("checkbox", { name: "message.received" }).isChecked()).toBe(true);
    await create.getByRole("checkbox", { name: "message.received" }).uncheck();
    await create.getByRole("checkbox", { name: "device.online" }).check();
    await expectAccessible(page, "webhooks create with event types");
    await page.getByRole("button", { name: "Create webhook" }).click();
    await page.getByRole("button", { name: "Done" }).click();
    const hook = page.locator("li.card", { hasText: "Devices" });
    await hook.getByText("Events: device.online").waitFor();

    const token = await tokenOf(page);
    const list = async () =>
      (await (await fetch(`${w.base}/api/webhook-integrations`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        data: { id: number; name: string; event_types: string[] }[];
      };
    const saved = (await list()).data.find((h) => h.name === "Devices")!;
    expect(saved.event_types).toEqual(["device.online"]);

    await w.ctx.sql.begin((tx) => appendEvents(tx, [{ organizationId: orgId, type: "device.online", payload: { device_id: 1 } }]));
    w.ctx.services.events.notify();
    const online = () => received.filter((r) => r.body.includes('"device.online"'));
    await eventually(() => online().length === 1, 10_000, "the device.online delivery");
    const webhookId = online()[0]!.headers["webhook-id"]!;
    expect(webhookId).toBeTruthy();

    await hook.getByRole("button", { name: "Deliveries" }).click();
    await hook.getByRole("table").getByText("device.online").waitFor();
    await hook
      .getByRole("button", { name: /^Redeliver/ })
      .first()
      .click();
    await hook.getByText(new RegExp(`Redelivery queued\\. device\\.online as delivery \\d+, webhook-id ${webhookId}`)).waitFor();
    await eventually(() => online().length === 2, 10_000, "the redelivery");
    expect(online()[1]!.headers["webhook-id"]).toBe(webhookId);

    await hook.getByRole("button", { name: "Replay…" }).click();
    const replay = hook.getByRole("form", { name: "Replay events of Devices" });
    await replay.getByRole("checkbox", { name: "device.online" }).check();
    await expectAccessible(page, "webhooks replay");
    await replay.getByRole("button", { name: "Replay", exact: true }).click();
    await replay.getByText(/Replay queued\. 1 delivery of device\.online/).waitFor();
    await eventually(() => online().length === 3, 10_000, "the replayed delivery");
    expect(online()[2]!.headers["webhook-id"]).toBe(webhookId);
    // a window over 7 days: the API's message is shown
    await replay.getByLabel("Since").fill("2026-01-01T00:00");
    await replay.getByRole("button", { name: "Replay", exact: true }).click();
    await replay.getByRole("alert").getByText("7 days", { exact: false }).waitFor();

    await hook.getByRole("button", { name: "Edit" }).click();
    const edit = hook.getByRole("form", { name: "Edit Devices" });
    expect(await edit.getByRole("checkbox", { name: "device.online" }).isChecked()).toBe(true);
    await edit.getByRole("checkbox", { name: "All events" }).check();
    expect(await edit.getByRole("checkbox", { name: "device.offline" }).isDisabled()).toBe(true);
    await hook.getByRole("button", { name: "Save" }).click();
    await hook.getByText("Events: all events").waitFor();
    expect((await list()).data.find((h) => h.name === "Devices")!.event_types).toEqual(["*"]);
    await context.close();
  }, 90_000);

  test("a member sees webhooks and teams without the admin actions", async () => {
    const owner = await createMember(w.ctx.sql);
    const member = await createMember(w.ctx.sql, { role: "member", orgId: owner.orgId });
    await w.ctx.sql`insert into teams (organization_id, name) values (${owner.orgId}, 'Support')`;
    const context = await newContext(w);
    const page = await context.newPage();
    await signIn(page, member.user.email, undefined, "/teams");
    await page.getByText("Support").waitFor();
    expect(await page.getByRole("button", { name: "Create team" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Delete team" }).count()).toBe(0);
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByText("Owners and admins create them", { exact: false }).waitFor();
    expect(await page.getByRole("button", { name: "Create webhook" }).count()).toBe(0);
    await w.ctx
      .sql`insert into webhook_integrations (organization_id, name, url, secret_sealed) values (${owner.orgId}, 'Shared', 'http://127.0.0.1:9/x', 'x')`;
    await page.reload();
    const shared = page.locator("li.card", { hasText: "Shared" });
    await shared.getByText("Events: message.received").waitFor();
    // The test event is an admin's action (the API answers a member 403).
    expect(await shared.getByRole("button", { name: "Send a test" }).count()).toBe(0);
    await shared.getByRole("button", { name: "Deliveries" }).click();
    expect(await shared.getByRole("button", { name: "Replay…" }).count()).toBe(0);
    expect(await shared.getByRole("button", { name: /^Redeliver/ }).count()).toBe(0);
    await context.close();
  }, 60_000);
});
