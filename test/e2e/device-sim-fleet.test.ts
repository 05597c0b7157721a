import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { runFleet } from "../../device-sim/fleet";
import { parseScenario } from "../../device-sim/scenario";
import { createTenant, TEST_PASSWORD } from "../fixtures";
import { call, PROVIDER_NUMBER, PROVIDER_TOKEN, ROOT, simulatorServer, waitFor } from "./device-sim-server";

const DEVICES = 50;
const OFFLINE_PERCENT = 20;
// Short device timing so a run of seconds shows heartbeats and the offline rule (defaults stay 60/360/960 s).
const s = simulatorServer({
  env: { HEARTBEAT_SECONDS: "1", OFFLINE_AFTER_SECONDS: "4", DOZE_OFFLINE_AFTER_SECONDS: "8", WEBHOOK_ALLOW_PRIVATE: "true" },
  provider: false,
});

/** A webhook receiver that accepts only correctly signed deliveries (Standard Webhooks) and keeps the texts. */
async function webhookReceiver(token: string) {
  const texts: string[] = [];
  let bad = 0;
  let verifier: Webhook | undefined;
  const receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const payload = await req.text();
      try {
        const event = verifier!.verify(payload, Object.fromEntries(req.headers)) as { type: string; data: { text?: string; message?: { text: string } } };
        if (event.type === "message.received") texts.push(event.data.text ?? event.data.message?.text ?? "");
      } catch {
        bad++;
        return new Response("bad signature", { status: 400 });
      }
      return new Response("ok");
    },
  });
  const team = await call(s.server, token, "POST", "/api/teams", { name: "Fleet QA" });
  const hook = await call(s.server, token, "POST", "/api/webhook-integrations", {
    name: "fleet receiver",
    url: `http://127.0.0.1:${receiver.port}/hook`,
    retry_count: 5,
  });
  verifier = new Webhook(hook.data.secret);
  await call(s.server, token, "POST", `/api/webhook-integrations/${hook.data.id}/mappings`, { team_id: team.data.id, forwarding_mode: "always" });
  return { texts, bad: () => bad, stop: () => receiver.stop(true) };
}

async function cliDevices(token: string) {
  const proc = Bun.spawn([process.execPath, "cli/main.ts", "devices", "list", "--json"], {
    cwd: ROOT,
    env: { ...process.env, SIMHOST_URL: s.server.url, SIMHOST_TOKEN: token, NO_COLOR: "1" } as Record<string, string>,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  expect(code).toBe(0);
  return (JSON.parse(out) as { data: { id: number; is_online: boolean }[] }).data;
}

describe("device-sim fleet against the real server", () => {
  test(`${DEVICES} devices: all verified and online, every SMS acknowledged, visible through the API and delivered to a webhook; a share goes offline and is seen offline`, async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "enterprise" });
    const hooks = await webhookReceiver(tenant.token);
    // Sent to a device on its private channel while the fleet runs: it must come back delivered.
    let outboundId: number | undefined;
    let maxOffline = 0;
    const scenario = parseScenario({
      steps: [
        { at: "3s", action: "offline", percent: OFFLINE_PERCENT },
        { at: "4s", action: "burst", sms: 100 },
      ],
    });
    const watch = (async () => {
      await waitFor(async () => (await call(s.server, tenant.token, "GET", "/api/numbers")).data.length >= DEVICES, 60_000, 500);
      // A rename is a config change: the listening device is told (config.changed) and re-reads its config.
      const [first] = (await call(s.server, tenant.token, "GET", "/api/byos/devices?per_page=1")).data as { id: number }[];
      await call(s.server, tenant.token, "PATCH", `/api/byos/devices/${first!.id}`, { device_name: "renamed by QA" });
      // The CLI an operator uses shows the devices that dropped off as offline.
      await waitFor(
        async () =>
          (maxOffline = Math.max(maxOffline, (await cliDevices(tenant.token)).filter((d) => !d.is_online).length)) >= (DEVICES * OFFLINE_PERCENT) / 100,
        25_000,
        1000,
      );
      // Sent once the offline share is known, through a device that stayed online: which devices the
      // share takes depends on which had started by then, so a number picked earlier could be on a
      // phone that never comes back in this run.
      const devices = (await call(s.server, tenant.token, "GET", "/api/byos/devices?per_page=100")).data as {
        is_online: boolean;
        sim_cards: { is_active: boolean; hosted_sim_id: number | null }[];
      }[];
      const card = devices.filter((d) => d.is_online).flatMap((d) => d.sim_cards.filter((c) => c.is_active && c.hosted_sim_id !== null))[0];
      outboundId = (
        await call(s.server, tenant.token, "POST", "/api/messages", { hosted_sim: card!.hosted_sim_id, to: "+15557654321", text: "outbound from the API" })
      ).data.id;
    })();
    const report = await runFleet({
      serverUrl: s.server.url,
      accounts: [{ email: tenant.user.email, password: TEST_PASSWORD }],
      devices: DEVICES,
      smsRate: 10,
      dozeRatio: 0.2,
      churn: 0,
      durationMs: 25_000,
      seed: 20261122,
      scenario,
      providerToken: PROVIDER_TOKEN,
      providerNumber: PROVIDER_NUMBER,
      publicUrl: s.server.url,
      listen: true,
      settleMs: 30_000,
    });
    await watch;

    // A failure says what the run saw: the report, the offline count and the outbound message as the API has it.
    try {
      expect(report.failures).toEqual([]);
      expect(report.passed).toBe(true);
      expect(report.devices).toMatchObject({ requested: DEVICES, registered: DEVICES, verified: DEVICES, unverified: 0, online: DEVICES, failed_to_start: 0 });
      expect(report.sms.received).toBeGreaterThan(100);
      expect(report.sms).toMatchObject({ acknowledged: report.sms.received, visible: report.sms.received, pending: 0, not_visible: 0, lost: 0 });
      expect(maxOffline).toBeGreaterThanOrEqual((DEVICES * OFFLINE_PERCENT) / 100);
      expect(report.heartbeats).toBeGreaterThan(DEVICES);
      expect(report.latency_ms.sms!.count).toBeGreaterThanOrEqual(report.sms.received);
      expect(report.latency_ms.config!.count).toBeGreaterThan(DEVICES);

      expect(outboundId).toBeDefined();
      expect(report.outbound.phones.delivered).toBe(1);
      const outbound = await call(s.server, tenant.token, "GET", `/api/messages/${outboundId}`);
      expect(outbound.data.status).toBe("delivered");

      const delivered = await waitFor(() => hooks.texts.length >= report.sms.acknowledged, 30_000, 500);
      hooks.stop();
      expect(delivered).toBe(true);
      expect(hooks.bad()).toBe(0);
    } catch (e) {
      const outbound = outboundId === undefined ? null : (await call(s.server, tenant.token, "GET", `/api/messages/${outboundId}`)).data;
      console.error("fleet run:", JSON.stringify({ report, maxOffline, outbound, webhookTexts: hooks.texts.length, badSignatures: hooks.bad() }));
      throw e;
    }
  }, 180_000);

  test("a run repeated with its seed on the same account sends new SMS, each stored: none taken for the first run's", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "enterprise" });
    const stored = async () =>
      (
        await s.server.sql<{ n: number }[]>`
          select count(*)::int as n from messages m join hosted_sim_organizations o on o.hosted_sim_id = m.hosted_sim_id
          where o.organization_id = ${tenant.org.id} and m.direction = 'inbound'`
      )[0]!.n;
    const run = () =>
      runFleet({
        serverUrl: s.server.url,
        accounts: [{ email: tenant.user.email, password: TEST_PASSWORD }],
        devices: 2,
        smsRate: 0,
        dozeRatio: 0,
        churn: 0,
        durationMs: 2_000,
        seed: 42,
        scenario: parseScenario({ steps: [{ at: "0.5s", action: "burst", sms: 6 }] }),
        providerToken: PROVIDER_TOKEN,
        providerNumber: PROVIDER_NUMBER,
        publicUrl: s.server.url,
        settleMs: 15_000,
      });
    const first = await run();
    expect(first.failures).toEqual([]);
    expect(await stored()).toBe(6);
    const again = await run();
    expect(again.failures).toEqual([]);
    expect(again.sms).toMatchObject({ received: 6, visible: 6 });
    expect(await stored()).toBe(12);
  }, 90_000);

  test("a scenario's revoke counts the phone revoked and passes; its last step, due just before the end, still runs", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "enterprise" });
    const report = await runFleet({
      serverUrl: s.server.url,
      accounts: [{ email: tenant.user.email, password: TEST_PASSWORD }],
      devices: 3,
      smsRate: 0,
      dozeRatio: 0,
      churn: 0,
      durationMs: 4_000,
      seed: 202,
      // The burst is due 0.3 s before the end of the run's load, once every phone is up.
      scenario: parseScenario({
        steps: [
          { at: "1s", action: "revoke", devices: 1 },
          { at: "3.7s", action: "burst", sms: 5 },
        ],
      }),
      providerToken: PROVIDER_TOKEN,
      providerNumber: PROVIDER_NUMBER,
      publicUrl: s.server.url,
      settleMs: 15_000,
    });
    expect(report.failures).toEqual([]);
    expect(report.devices).toMatchObject({ revoked: 1, online: 2 });
    expect(report.sms.received).toBe(5);
  }, 60_000);
});
