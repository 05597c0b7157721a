import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storeInboundMessage } from "../../server/messages/inbound";
import { createTenant } from "../fixtures";
import { attachNumber, spawnCli, startCliServer } from "./cli-helpers";

// Live commands over the realtime WebSocket; the job workers run so inbound SMS fan out.
let server: Awaited<ReturnType<typeof startCliServer>>;
beforeAll(async () => {
  server = await startCliServer();
  server.ctx.services.start();
});
afterAll(() => server?.close());

const live = (token: string, args: string[]) => spawnCli(["--url", server.url, "--token", token, ...args], server.env);

describe("simhost messages tail", () => {
  test("prints each SMS as it arrives on the number (--json: one object per line)", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const tail = live(token, ["messages", "tail", "--number", sim.number, "--count", "2", "--json"]);
    await tail.waitFor("stderr", /Following number/);
    for (const text of ["first live SMS", "second live SMS"]) {
      await server.ctx.sql.begin((tx) =>
        storeInboundMessage(tx, { hostedSimId: sim.id, from: "+15557654321", text, source: "provider", receivedAt: new Date() }),
      );
    }
    expect(await tail.exited()).toBe(0);
    const lines = tail.out.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.event, l.message.text]).sort()).toEqual([
      ["message.received", "first live SMS"],
      ["message.received", "second live SMS"],
    ]);
  });

  test("a number of another organization: exit 1", async () => {
    const a = await createTenant(server.ctx.sql);
    const b = await createTenant(server.ctx.sql);
    const theirs = await attachNumber(server.ctx, b.org.id);
    const tail = live(a.token, ["messages", "tail", "--number", String(theirs.id)]);
    expect(await tail.exited()).toBe(1);
    expect(tail.out.stderr.trim()).toBe("Number not found.");
  });
});

describe("simhost devices watch", () => {
  test("reports a device coming online", async () => {
    const { token } = await createTenant(server.ctx.sql);
    const reg = await server.ctx.request("POST", "/api/byos/devices/register", {
      token,
      body: { android_id: crypto.randomUUID().replace(/-/g, "").slice(0, 16), sim_slots: [1], device_model: "Pixel 8", app_version: "1.0.0" },
    });
    expect(reg.status).toBe(201);
    const watch = live(token, ["devices", "watch", "--count", "1", "--json"]);
    await watch.waitFor("stderr", /Watching the devices/);
    const beat = await server.ctx.request("POST", `/api/byos/devices/${reg.body.id}/heartbeat`, { token, body: { battery_level: 80 } });
    expect(beat.status).toBe(200);
    expect(await watch.exited()).toBe(0);
    const [event] = watch.out.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(event).toMatchObject({ event: "device.status_changed", device: { id: reg.body.id, is_online: true } });
  });
});
