import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTenant } from "../fixtures";
import { startCliServer } from "./cli-helpers";

let server: Awaited<ReturnType<typeof startCliServer>>;
let status = 200;
const received: string[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    received.push(await req.text());
    return new Response(status === 200 ? "thanks" : "nope", { status });
  },
});
beforeAll(async () => {
  server = await startCliServer();
});
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
  });

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
});
