import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendEvents } from "../../server/events/log";
import { createTenant } from "../fixtures";
import { createTeam, eventually } from "../fixtures-numbers";
import { startCliServer } from "./cli-helpers";

let server: Awaited<ReturnType<typeof startCliServer>>;
let status = 200;
const received: string[] = [];
const ids: string[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    received.push(await req.text());
    ids.push(req.headers.get("webhook-id") ?? "");
    return new Response(status === 200 ? "thanks" : "nope", { status });
  },
});
let servicesStarted = false;
/** Background work (event-log deliveries, retries), started once for the tests that need it. */
function startServices() {
  if (!servicesStarted) server.ctx.services.start();
  servicesStarted = true;
}
beforeAll(async () => {
  server = await startCliServer();
}, 60_000);
afterAll(async () => {
  receiver.stop(true);
  await server?.close();
});

describe("simhost webhooks", () => {
  test("list, test (exit 1 when the endpoint fails), logs", async () => {
    const { token } = await createTenant(server.ctx.sql);
    const created = await server.ctx.request("POST", "/api/webhook-integrations", {
      token,
      body: { name: "Receiver", url: `http://127.0.0.1:${receiver.port}/hook` },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as number;

    const list = await server.run(token, ["webhooks", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(list.json().data.map((i: any) => i.id)).toEqual([id]);
    expect((await server.run(token, ["webhooks", "list"])).stdout).toMatch(
      new RegExp(`^${id}\\s+Receiver\\s+http://127.0.0.1:${receiver.port}/hook\\s+active`, "m"),
    );

    status = 200;
    const ok = await server.run(token, ["webhooks", "test", String(id), "--json"]);
    expect(ok.code).toBe(0);
    expect(ok.json()).toMatchObject({ success: true, http_status: 200, response_body: "thanks" });
    expect(received.some((body) => body.includes("webhook.test"))).toBe(true);

    status = 500;
    const failed = await server.run(token, ["webhooks", "test", String(id), "--json"]);
    expect(failed.code).toBe(1);
    expect(failed.json()).toMatchObject({ success: false, http_status: 500 });
    expect(failed.stderr.trim()).toBe("Test delivery failed with HTTP 500.");

    const logs = await server.run(token, ["webhooks", "logs", String(id), "--json"]);
    expect(logs.code).toBe(0);
    expect(logs.json().data.map((l: any) => [l.event_type, l.http_status])).toEqual([
      ["webhook.test", 500],
      ["webhook.test", 200],
    ]);
    const table = await server.run(token, ["webhooks", "logs", String(id)]);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+AT\s+EVENT\s+MESSAGE\s+TRY\s+STATUS\s+HTTP/);
  }, 60_000);

  test("another organization's integration is not found (exit 1)", async () => {
    const a = await createTenant(server.ctx.sql);
    const b = await createTenant(server.ctx.sql);
    const theirs = await server.ctx.request("POST", "/api/webhook-integrations", {
      token: b.token,
      body: { name: "Theirs", url: `http://127.0.0.1:${receiver.port}/x` },
    });
    const r = await server.run(a.token, ["webhooks", "test", String(theirs.body.data.id)]);
    expect(r.code).toBe(1);
    expect((await server.run(a.token, ["webhooks", "logs", String(theirs.body.data.id)])).code).toBe(1);
  });

  test("message events need a team's mapping: create says so without --team, maps with it, and map adds one", async () => {
    const { token, org } = await createTenant(server.ctx.sql);
    const url = `http://127.0.0.1:${receiver.port}/mapped`;
    const [a, b] = [await createTeam(server.ctx.sql, org.id), await createTeam(server.ctx.sql, org.id)];
    const bare = await server.run(token, ["webhooks", "create", "--name", "Bare", "--endpoint", url]);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toContain("Message events reach it only through a team's mapping: simhost webhooks map");
    const mapped = await server.run(token, [
      "webhooks",
      "create",
      "--name",
      "Mapped",
      "--endpoint",
      url,
      "--team",
      String(a.id),
      "--mode",
      "lock_required",
      "--json",
    ]);
    expect(mapped.code).toBe(0);
    const id = String(mapped.json().data.id);
    const added = await server.run(token, ["webhooks", "map", id, "--team", String(b.id)]);
    expect([added.code, added.stdout.trim()]).toEqual([0, `Integration ${id} gets team ${b.id}'s message events (always).`]);
    expect((await server.run(token, ["webhooks", "map", id, "--team", String(b.id)])).code).toBe(1);
    const listed = (await server.run(token, ["webhooks", "list", "--json"])).json().data.find((i: { id: number }) => String(i.id) === id);
    expect(listed.mappings.map((m: { team_id: number; forwarding_mode: string }) => [m.team_id, m.forwarding_mode]).sort()).toEqual(
      [
        [a.id, "lock_required"],
        [b.id, "always"],
      ].sort(),
    );
  });

  test("create and update with --events, redeliver a log record, replay a window", async () => {
    startServices();
    const { token, org } = await createTenant(server.ctx.sql);
    const url = `http://127.0.0.1:${receiver.port}/events`;
    const created = await server.run(token, [
      "webhooks",
      "create",
      "--name",
      "Events",
      "--endpoint",
      url,
      "--events",
      "device.online,device.offline",
      "--json",
    ]);
    expect(created.code).toBe(0);
    expect(created.json().data).toMatchObject({ name: "Events", event_types: ["device.online", "device.offline"] });
    expect(created.json().data.secret).toMatch(/^whsec_/);
    const id = String(created.json().data.id);

    const bad = await server.run(token, ["webhooks", "update", id, "--events", "device.exploded"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("device.exploded");
    const updated = await server.run(token, ["webhooks", "update", id, "--events", "*", "--json"]);
    expect(updated.code).toBe(0);
    expect(updated.json().data).toMatchObject({ name: "Events", url, event_types: ["*"] });
    expect((await server.run(token, ["webhooks", "list"])).stdout).toMatch(new RegExp(`^${id}\\s+Events\\s+\\S+\\s+active\\s+\\*`, "m"));

    status = 200;
    await server.ctx.sql.begin((tx) => appendEvents(tx, [{ organizationId: org.id, type: "device.online", payload: { device_id: 1 } }]));
    server.ctx.services.events.notify();
    await eventually(() => received.some((b) => b.includes('"device.online"')), 10_000, "the delivery");
    const eventId = ids[received.findIndex((b) => b.includes('"device.online"'))]!;

    const logs = await eventually(async () => {
      const l = (await server.run(token, ["webhooks", "logs", id, "--json"])).json().data;
      return l.length > 0 && l;
    }, 10_000);
    const again = await server.run(token, ["webhooks", "redeliver", id, String(logs[0].id), "--json"]);
    expect(again.code).toBe(0);
    expect(again.json().data).toMatchObject({ event_id: eventId, event_type: "device.online" });
    await eventually(() => ids.filter((i) => i === eventId).length === 2, 10_000, "the redelivery");

    const replay = await server.run(token, ["webhooks", "replay", id, "--since", "1h", "--events", "device.online", "--json"]);
    expect(replay.code).toBe(0);
    expect(replay.json().data).toMatchObject({ deliveries: 1, event_types: ["device.online"] });
    await eventually(() => ids.filter((i) => i === eventId).length === 3, 10_000, "the replay");
    const tooOld = await server.run(token, ["webhooks", "replay", id, "--since", "30d"]);
    expect(tooOld.code).toBe(2);
    expect(tooOld.stderr).toContain("--since is more than 7 days ago");
  }, 60_000);

  test("replay --since 7d (1w, 168h) without --until is exactly the 7 days allowed; 8d is a usage error that names --since", async () => {
    const { token } = await createTenant(server.ctx.sql);
    const created = await server.run(token, ["webhooks", "create", "--name", "Week", "--endpoint", `http://127.0.0.1:${receiver.port}/week`, "--json"]);
    const id = String(created.json().data.id);
    for (const age of ["7d", "1w", "168h"]) {
      const r = await server.run(token, ["webhooks", "replay", id, "--since", age, "--json"]);
      expect([age, r.code, r.stderr]).toEqual([age, 0, ""]);
      const { since, until } = r.json().data;
      expect(Date.parse(until) - Date.parse(since)).toBe(7 * 86_400_000);
    }
    const over = await server.run(token, ["webhooks", "replay", id, "--since", "8d"]);
    expect(over.code).toBe(2);
    expect(over.stderr).toContain("--since is more than 7 days ago");
    expect(over.stderr).not.toContain("until field");
  });

  test("create --mode without --team is a usage error (exit 2) and creates nothing", async () => {
    const { token } = await createTenant(server.ctx.sql);
    const r = await server.run(token, [
      "webhooks",
      "create",
      "--name",
      "Lost mode",
      "--endpoint",
      `http://127.0.0.1:${receiver.port}/x`,
      "--mode",
      "lock_required",
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--mode applies to a team's mapping: give --team too");
    expect((await server.run(token, ["webhooks", "list", "--json"])).json().data).toEqual([]);
  });

  test("logs shows a failed attempt's error and when its retry is due", async () => {
    startServices();
    const { token, org } = await createTenant(server.ctx.sql);
    const created = await server.ctx.request("POST", "/api/webhook-integrations", {
      token,
      body: { name: "Failing", url: `http://127.0.0.1:${receiver.port}/failing`, event_types: ["device.offline"] },
    });
    const id = String(created.body.data.id);
    status = 500;
    try {
      await server.ctx.sql.begin((tx) => appendEvents(tx, [{ organizationId: org.id, type: "device.offline", payload: { device_id: 1 } }]));
      server.ctx.services.events.notify();
      const failed = await eventually(async () => {
        const l = (await server.run(token, ["webhooks", "logs", id, "--json"])).json().data as { error: string | null; next_retry_at: string | null }[];
        return l.find((x) => x.next_retry_at);
      }, 15_000);
      expect(failed.error).toBe("HTTP 500");
      const table = await server.run(token, ["webhooks", "logs", id]);
      expect(table.code).toBe(0);
      expect(table.stdout).toContain(`HTTP 500; retry at ${failed.next_retry_at}`);
    } finally {
      status = 200;
    }
  }, 60_000);
});
