import { describe, expect, test } from "bun:test";
import { createTenant, TEST_PASSWORD } from "../fixtures";
import { createSharedNumber } from "../fixtures-numbers";
import { call, PROVIDER_NUMBER, PROVIDER_TOKEN, ROOT, simulatorServer, waitFor } from "./device-sim-server";

/**
 * Delivery reports end to end, on the real server process: the provider emulator reports each
 * pool-number send by signed status callbacks, and they are seen in GET /api/events; a forged
 * callback is refused. Then `device-sim fleet` sends through its phones with a failure rate and
 * reports outbound figures.
 */
const s = simulatorServer({
  env: {
    HEARTBEAT_SECONDS: "1",
    OFFLINE_AFTER_SECONDS: "4",
    // A send no phone takes (its order missed while a socket reconnects) ends failed within the run, not lost.
    OUTBOUND_DEVICE_TIMEOUT_SECONDS: "10",
  },
  provider: { undeliveredRate: 0.5, seed: 20261123 },
});

type Listed = { type: string; data: { message: { id: number; status: string; error: string | null; attempts: number } } };

describe("provider status callbacks on the real server", () => {
  test("each send ends delivered or failed by the provider's callbacks, listed once in GET /api/events with the reason", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "enterprise" });
    const sim = await createSharedNumber(s.server.sql, [tenant.org.id]);
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) {
      const to = `+1555300${String(i).padStart(4, "0")}`;
      ids.push((await call(s.server, tenant.token, "POST", "/api/messages", { hosted_sim: sim.id, to, text: `report ${i}` })).data.id);
    }
    const final = async () => {
      const statuses = await Promise.all(ids.map(async (id) => (await call(s.server, tenant.token, "GET", `/api/messages/${id}`)).data));
      return statuses.every((m) => m.status === "delivered" || m.status === "failed") ? statuses : null;
    };
    let messages: Awaited<ReturnType<typeof final>> = null;
    expect(await waitFor(async () => (messages = await final()) !== null, 30_000, 250)).toBe(true);
    const failed = messages!.filter((m) => m.status === "failed");
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.length).toBeLessThan(10);
    for (const m of failed) expect(m.error).toBe("Unreachable destination handset (provider error 30003)");
    for (const m of messages!) expect(m.attempts).toBe(1);

    // Listed once every transaction begun before them has ended: a moment after the commit on a busy server.
    let listed: Listed[] = [];
    const allListed = async () => {
      listed = (await call(s.server, tenant.token, "GET", "/api/events?types=message.sent,message.delivered,message.failed&per_page=100")).data as Listed[];
      return messages!.every((m) => listed.some((e) => e.data.message.id === m.id && e.type === `message.${m.status}`));
    };
    expect(await waitFor(allListed, 15_000, 250)).toBe(true);
    for (const m of messages!) {
      const own = listed.filter((e) => e.data.message.id === m.id).map((e) => e.type);
      expect([m.id, own]).toEqual([m.id, ["message.sent", `message.${m.status}`]]);
    }
    // Every callback the emulator made was accepted, the late `sent` ones included (a no-op).
    expect(s.provider.callbacks.filter((c) => ids.some((id) => c.url.endsWith(`/messages/${id}/status`))).map((c) => c.answered)).toEqual(Array(20).fill(200));
  }, 60_000);

  test("a forged status callback is refused with 403 in the error shape, and changes nothing", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "enterprise" });
    const sim = await createSharedNumber(s.server.sql, [tenant.org.id]);
    const id = (await call(s.server, tenant.token, "POST", "/api/messages", { hosted_sim: sim.id, to: "+15553009999", text: "forge me" })).data.id;
    const res = await fetch(`${s.server.url}/api/provider/messages/${id}/status`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-provider-signature": "Zm9yZ2Vk" },
      body: new URLSearchParams({ MessageSid: "SMforged", MessageStatus: "delivered" }).toString(),
    });
    expect(res.status).toBe(403);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_signature");
    expect(typeof body.message).toBe("string");
    const after = (await call(s.server, tenant.token, "GET", `/api/messages/${id}`)).data;
    expect(after.external_id).not.toBe("SMforged");
  }, 30_000);
});

describe("device-sim fleet outbound figures", () => {
  test("a run with a small failure rate reports accepted, sent, delivered and failed, nothing duplicated or lost, and exits 0", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "enterprise" });
    const proc = Bun.spawn(
      [
        process.execPath,
        "device-sim/main.ts",
        "fleet",
        ...["--server", s.server.url, "--account", `${tenant.user.email}:${TEST_PASSWORD}`, "--devices", "3", "--duration", "10s"],
        ...["--sms-rate", "0", "--send-rate", "4", "--send-pace", "600", "--send-fail-rate", "0.2"],
        ...["--listen", "--seed", "7", "--settle", "30s", "--time-scale", "0.2"],
        ...["--provider-token", PROVIDER_TOKEN, "--provider-number", PROVIDER_NUMBER, "--public-url", s.server.url, "--json"],
      ],
      { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } as Record<string, string> },
    );
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect([code, err.slice(-500)]).toEqual([0, err.slice(-500)]);
    const report = JSON.parse(out);
    const o = report.outbound;
    expect(report.passed).toBe(true);
    expect(o.accepted).toBeGreaterThan(10);
    expect(o).toMatchObject({ refused: 0, duplicated: 0, lost: 0 });
    expect(o.delivered + o.failed + o.expired + o.cancelled).toBe(o.accepted);
    expect(o.failed).toBeGreaterThan(0);
    expect(o.delivered).toBeGreaterThan(o.failed);
    expect(o.sent).toBe(o.delivered);
    expect(o.phones.failed).toBe(o.failed);
  }, 120_000);
});
