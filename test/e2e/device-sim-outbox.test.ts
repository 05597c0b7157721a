import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTenant, TEST_PASSWORD } from "../fixtures";
import { call, ROOT, simulatorServer, waitFor } from "./device-sim-server";

const s = simulatorServer();

/** `device-sim device` as its own process, its log (stderr) collected line by line. */
function spawnDevice(email: string, state: string, extra: string[]) {
  const lines: string[] = [];
  const proc = Bun.spawn(
    [
      process.execPath,
      "device-sim/main.ts",
      "device",
      "--server",
      s.server.url,
      "--provider-url",
      s.provider.url,
      "--email",
      email,
      "--password",
      TEST_PASSWORD,
    ].concat(["--state", state, "--no-listen", "--time-scale", "0.1", "--exit-when-idle", "--json", ...extra]),
    { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
  );
  void (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of proc.stderr) {
      buffered += decoder.decode(chunk);
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      lines.push(...parts);
    }
  })();
  const count = (what: string) => lines.filter((l) => l.includes(` ${what}`) && l.includes(" sms ")).length;
  return { proc, lines, received: () => count("received"), acknowledged: () => count("acknowledged"), output: () => new Response(proc.stdout).text() };
}

/** Every inbound message on the device's number, with how often each text arrived. */
async function arrivedOn(token: string, state: string) {
  const { device_id } = JSON.parse(readFileSync(join(state, "device.json"), "utf8")) as { device_id: number };
  const device = (await call(s.server, token, "GET", `/api/byos/devices/${device_id}`)).data as { sim_cards: { hosted_sim_id: number }[] };
  const texts: string[] = [];
  for (const card of device.sim_cards) {
    const page = await call(s.server, token, "GET", `/api/messages?hosted_sim=${card.hosted_sim_id}&per_page=100&direction=inbound`);
    texts.push(...(page.data as { text: string }[]).map((m) => m.text));
  }
  return texts;
}

describe("device outbox (real server stopped and restarted)", () => {
  test("the server is killed during submission and restarted: the device retries with backoff and every SMS arrives once", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "pro" });
    const state = mkdtempSync(join(tmpdir(), "device-sim-outbox-"));
    const device = spawnDevice(tenant.user.email, state, ["--sms-every", "100ms", "--sms", "40", "--seed", "11", "--slots", "1"]);
    expect(await waitFor(() => device.acknowledged() >= 8, 30_000)).toBe(true);
    await s.server.stop("SIGKILL");
    // SMS keep arriving on the phone while the server is away: they wait in the outbox.
    expect(await waitFor(() => device.received() >= device.acknowledged() + 5, 10_000)).toBe(true);
    await s.server.start();
    expect(await device.proc.exited).toBe(0);
    const summary = JSON.parse(await device.output());
    expect(summary.pending).toBe(0);
    expect(summary.counters["sms.received"]).toBe(40);
    expect(summary.counters["sms.acknowledged"]).toBe(40);
    expect(Object.keys(summary.errors).some((k) => k.startsWith("sms "))).toBe(true);

    let texts: string[] = [];
    await waitFor(async () => (texts = await arrivedOn(tenant.token, state)).length >= 40, 20_000, 500);
    expect(texts).toHaveLength(40);
    expect(new Set(texts).size).toBe(40);
  }, 120_000);

  test("the phone itself dies while the server is down: restarted on the same state folder it sends what was queued, each SMS once", async () => {
    if (!s.available) return;
    const tenant = await createTenant(s.server.sql, { plan: "pro" });
    const state = mkdtempSync(join(tmpdir(), "device-sim-outbox-"));
    const first = spawnDevice(tenant.user.email, state, ["--sms-every", "100ms", "--sms", "30", "--seed", "12", "--slots", "1"]);
    expect(await waitFor(() => first.acknowledged() >= 5, 30_000)).toBe(true);
    await s.server.stop("SIGKILL");
    expect(await waitFor(() => first.received() >= first.acknowledged() + 5, 10_000)).toBe(true);
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    const made = first.received();
    expect(readFileSync(join(state, "outbox.jsonl"), "utf8").trim().split("\n").length).toBeGreaterThanOrEqual(5);

    await s.server.start();
    // No new SMS this time: the restarted phone only drains its outbox, then exits.
    const second = spawnDevice(tenant.user.email, state, []);
    expect(await second.proc.exited).toBe(0);
    expect(JSON.parse(await second.output()).pending).toBe(0);

    let texts: string[] = [];
    await waitFor(async () => (texts = await arrivedOn(tenant.token, state)).length >= made, 20_000, 500);
    expect(texts).toHaveLength(made);
    expect(new Set(texts).size).toBe(made);
  }, 120_000);
});
