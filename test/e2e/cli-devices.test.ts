import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { createTenant } from "../fixtures";
import { startCliServer, uniqueNumber } from "./cli-helpers";

let server: Awaited<ReturnType<typeof startCliServer>>;
beforeAll(async () => {
  server = await startCliServer();
});
afterAll(() => server?.close());

const hex16 = () => crypto.randomUUID().replace(/-/g, "").slice(0, 16);

async function registerDevice(token: string) {
  const res = await server.ctx.request("POST", "/api/byos/devices/register", {
    token,
    body: { android_id: hex16(), sim_slots: [1], device_model: "Pixel 8", app_version: "1.2.3", device_name: "Shelf phone" },
  });
  expect(res.status).toBe(201);
  return res.body as { id: number; sim_cards: { id: number; verification_code: string }[] };
}

/** The provider's callback carrying the verification SMS, signed as the provider signs it (API.md §3). */
async function verifySim(code: string) {
  const { config } = server.ctx;
  const form: Record<string, string> = { From: uniqueNumber(), To: config.PROVIDER_NUMBER, Body: code, MessageSid: `SM${hex16()}`, AccountSid: "AC1" };
  const url = `${config.PUBLIC_URL}/api/provider/sms`;
  const signed = Object.keys(form)
    .sort()
    .reduce((acc, k) => acc + k + form[k], url);
  const signature = createHmac("sha1", config.PROVIDER_AUTH_TOKEN).update(signed).digest("base64");
  const res = await server.ctx.request("POST", "/api/provider/sms", { form, headers: { "x-provider-signature": signature } });
  expect(res.status).toBe(200);
}

describe("simhost devices and sims", () => {
  test("list, show, reissue a code, then disable, enable, revoke", async () => {
    const { token } = await createTenant(server.ctx.sql);
    const device = await registerDevice(token);
    const sim = device.sim_cards[0]!;

    const list = await server.run(token, ["devices", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(list.json().data).toEqual([expect.objectContaining({ id: device.id, status: "pending_verification", device_name: "Shelf phone" })]);
    expect((await server.run(token, ["devices", "list", "--status", "active", "--json"])).json().data).toEqual([]);
    const table = await server.run(token, ["devices", "list"]);
    expect(table.stdout).toMatch(new RegExp(`^${device.id}\\s+Shelf phone\\s+-\\s+pending_verification\\s+offline`, "m"));

    const shown = await server.run(token, ["devices", "show", String(device.id), "--json"]);
    expect(shown.json().data).toMatchObject({ id: device.id, device_model: "Pixel 8", app_version: "1.2.3" });
    expect((await server.run(token, ["devices", "show", String(device.id)])).stdout).toContain("SIM cards");

    const reissued = await server.run(token, ["sims", "reissue", String(device.id), String(sim.id), "--json"]);
    expect(reissued.code).toBe(0);
    const code = reissued.json().data.verification_code;
    expect(code).toMatch(/^SIM-[A-Z2-9]{4}$/);
    expect(code).not.toBe(sim.verification_code);

    await verifySim(code);
    const refused = await server.run(token, ["sims", "reissue", String(device.id), String(sim.id)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);

    for (const [command, status] of [
      ["disable", "disabled"],
      ["enable", "active"],
      ["revoke", "revoked"],
    ] as const) {
      const r = await server.run(token, ["devices", command, String(device.id), "--json"]);
      expect(r.code).toBe(0);
      expect(r.json().data.status).toBe(status);
    }
    const again = await server.run(token, ["devices", "enable", String(device.id)]);
    expect(again.code).toBe(1);
  });

  test("another organization's device is not found; --org of a foreign organization too", async () => {
    const a = await createTenant(server.ctx.sql);
    const b = await createTenant(server.ctx.sql);
    const theirs = await registerDevice(b.token);
    const r = await server.run(a.token, ["devices", "show", String(theirs.id)]);
    expect(r.code).toBe(1);
    expect((await server.run(a.token, ["devices", "list", "--org", String(b.org.id)])).code).toBe(1);
    expect((await server.run(a.token, ["devices", "show", "x"])).code).toBe(2);
  });
});
