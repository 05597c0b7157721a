import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSync } from "otplib";
import { createTenant, TEST_PASSWORD } from "../fixtures";
import { attachNumber, createPoolNumber } from "../fixtures-numbers";
import { call, PROVIDER_TOKEN, ROOT, simulatorServer, waitFor } from "./device-sim-server";

const s = simulatorServer();

async function sim(args: string[]) {
  const proc = Bun.spawn([process.execPath, "device-sim/main.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

async function inboundTexts(token: string, hostedSim: number) {
  return ((await call(s.server, token, "GET", `/api/messages?hosted_sim=${hostedSim}&per_page=100`)).data as { text: string; from: string }[]).map(
    (m) => m.text,
  );
}

describe("device-sim device and provider inject as subprocesses", () => {
  test("an account with 2FA signs in with --totp-secret; scripted SMS arrive on the verified number", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "pro" });
    const { secret } = await call(s.server, tenant.token, "POST", "/api/auth/2fa/setup");
    await call(s.server, tenant.token, "POST", "/api/auth/2fa/enable", { code: generateSync({ secret }) });
    // The code just used may not be used twice; let the device's sign-in use the same time step.
    await s.server.sql`update users set totp_last_step = null where id = ${tenant.user.id}`;
    const dir = mkdtempSync(join(tmpdir(), "device-sim-script-"));
    const script = join(dir, "script.json");
    writeFileSync(
      script,
      JSON.stringify([
        { at: "0s", from: "+15551112222", body: "scripted one" },
        { at: "300ms", from: "Bank", body: "scripted two", sim_slot: 1 },
      ]),
    );
    const args = ["device", "--server", s.server.url, "--provider-url", s.provider.url, "--email", tenant.user.email, "--password", TEST_PASSWORD];
    const run = await sim([...args, "--totp-secret", secret, "--script", script, "--exit-when-idle", "--no-listen", "--state", join(dir, "state"), "--json"]);
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({ state: "stopped", pending: 0, counters: { "sms.received": 2, "sms.acknowledged": 2 } });

    const device = (await call(s.server, tenant.token, "GET", `/api/byos/devices/${summary.device_id}`)).data;
    expect(device.status).toBe("active");
    // An SMS without a slot goes to the device's first active SIM when it is processed, which is
    // either slot as their verifications race: read every number of the device.
    const hostedSims = (device.sim_cards as { hosted_sim_id: number | null }[]).map((c) => c.hosted_sim_id).filter((id): id is number => id !== null);
    let texts: string[] = [];
    const allTexts = async () => (await Promise.all(hostedSims.map((id) => inboundTexts(tenant.token, id)))).flat();
    await waitFor(async () => (texts = await allTexts()).length >= 2, 15_000, 300);
    expect(texts.sort()).toEqual(["scripted one", "scripted two"]);

    // Without --json, a person's summary (it printed the JSON either way).
    const plain = await createTenant(s.server.sql);
    const human = await sim([
      ...["device", "--server", s.server.url, "--provider-url", s.provider.url, "--email", plain.user.email, "--password", TEST_PASSWORD],
      ...["--exit-when-idle", "--no-listen", "--state", join(dir, "plain")],
    ]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^device \d+ stopped: every SMS made, 0 waiting to be accepted\ncounts {4}/);

    const without = await sim([...args, "--exit-when-idle", "--no-listen"]);
    expect(without.code).toBe(1);
    expect(without.stderr).toContain("--totp-secret");
  }, 60_000);

  test("--sms N without --sms-every makes N random SMS, and --exit-when-idle exits once they are acknowledged", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql);
    const dir = mkdtempSync(join(tmpdir(), "device-sim-count-"));
    const run = await sim([
      ...["device", "--server", s.server.url, "--provider-url", s.provider.url, "--email", tenant.user.email, "--password", TEST_PASSWORD],
      ...["--sms", "3", "--exit-when-idle", "--no-listen", "--state", dir, "--seed", "3", "--json"],
    ]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ all_sms_made: true, pending: 0, counters: { "sms.received": 3, "sms.acknowledged": 3 } });
  }, 60_000);

  test("device usage errors exit 2: --time-scale 0, bad --slots, --numbers not in E.164, --sms with --sms-every 0", async () => {
    const device = ["device", "--server", "http://127.0.0.1:9", "--email", "qa@example.test", "--password", "pw", "--exit-when-idle"];
    const cases: [string[], string][] = [
      [["--time-scale", "0"], "time-scale must be a number > 0"],
      [["--slots", "a"], "slots must be 1, 2 or 1,2"],
      [["--slots", "3"], "slots must be 1, 2 or 1,2"],
      [["--slots", "1,"], "slots must be 1, 2 or 1,2"],
      [["--slots", "2,2"], "a slot may be listed once"],
      [["--numbers", "12345"], '"12345" is not an E.164 number'],
      [["--numbers", "+15551234567,"], '"" is not an E.164 number'],
      [["--sms", "2", "--sms-every", "0"], "--sms 2 needs random SMS"],
    ];
    for (const [args, message] of cases) {
      const r = await sim([...device, ...args]);
      expect([args, r.code]).toEqual([args, 2]);
      expect(r.stderr).toContain(message);
    }
    const fleet = await sim(["fleet", "--server", "http://127.0.0.1:9", "--account", "qa@example.test:pw", "--time-scale", "0"]);
    expect(fleet.code).toBe(2);
    expect(fleet.stderr).toContain("time-scale must be a number > 0");
  }, 30_000);

  test("provider inject delivers a signed SMS to a pool number; a wrong token exits 1 with the API's message", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql);
    const pool = await createPoolNumber(s.server.sql);
    await attachNumber(s.server.sql, pool.id, tenant.org.id);
    const common = ["provider", "inject", "--server", s.server.url, "--public-url", s.server.url, "--to", pool.number, "--from", "+15557654321"];
    const ok = await sim([...common, "--token", PROVIDER_TOKEN, "--body", "hello from QA", "--json"]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ status: 200, ok: true });
    let texts: string[] = [];
    await waitFor(async () => (texts = await inboundTexts(tenant.token, pool.id)).length >= 1, 15_000, 300);
    expect(texts).toEqual(["hello from QA"]);

    // What it knows: the server took the callback (an SMS to a number nobody hosts is taken and dropped).
    const human = await sim([...common, "--token", PROVIDER_TOKEN, "--body", "said plainly"]);
    expect(human.stdout).toMatch(/^accepted by the server: SM\w+ \(200\)$/m);
    const bad = await sim([...common, "--token", "not-the-provider-token", "--body", "forged"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/403/);
    expect((await inboundTexts(tenant.token, pool.id)).sort()).toEqual(["hello from QA", "said plainly"]);
  }, 30_000);

  test("fleet usage errors exit 2: no account, a share above 1", async () => {
    const noAccount = await sim(["fleet", "--server", "http://127.0.0.1:9", "--email", "qa@example.test", "--duration", "1s"]);
    expect(noAccount.code).toBe(2);
    expect(noAccount.stderr).toContain("a fleet needs an account");
    for (const option of ["--churn", "--doze-ratio"]) {
      const tooMuch = await sim(["fleet", "--server", "http://127.0.0.1:9", "--account", "qa@example.test:pw", option, "7"]);
      expect([option, tooMuch.code]).toEqual([option, 2]);
      expect(tooMuch.stderr).toContain("must be a share between 0 and 1");
    }
  }, 30_000);
});
