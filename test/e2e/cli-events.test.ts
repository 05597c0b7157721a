import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp } from "../../server/app";
import { deleteEventsBefore } from "../../server/events/log";
import { createTenant } from "../fixtures";
import { append, testEvent } from "../fixtures-events";
import { eventually } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";
import { attachNumber, cliEnv, runCli, spawnCli } from "./cli-helpers";

/** Issue 16 item 8: `simhost events list` and `simhost events tail` against a served app. */
let ctx: TestContext;
let server: { stop: (closeActiveConnections?: boolean) => Promise<void> };
let port: number;
let url: string;
let env: Record<string, string>;

function serve() {
  const app = buildApp(ctx.services).listen({ port, hostname: "127.0.0.1" });
  server = { stop: async (force) => void (await app.stop(force)) };
}

beforeAll(async () => {
  ctx = await createTestContext();
  const first = buildApp(ctx.services).listen({ port: 0, hostname: "127.0.0.1" });
  port = first.server!.port!;
  server = { stop: async (force) => void (await first.stop(force)) };
  url = `http://127.0.0.1:${port}`;
  env = cliEnv(ctx);
}, 60_000);
afterAll(async () => {
  await server?.stop(true);
  await ctx?.close();
});

const run = (token: string, args: string[]) => runCli(["--url", url, "--token", token, ...args], { env });

describe("simhost events list", () => {
  test("lists after a cursor with filters; --all follows the cursor until caught up; the human view names the next cursor", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await attachNumber(ctx, t.org.id);
    await append(ctx, [
      testEvent(t.org.id, 1, {
        type: "message.received",
        hostedSimId: sim.id,
        payload: { n: 1, message: { from: "+15550001111", to: sim.number, text: "hello" } },
      }),
      testEvent(t.org.id, 2, { type: "device.online", deviceId: 42, payload: { n: 2, device_id: 42, status: "active" } }),
      ...[3, 4, 5].map((n) => testEvent(t.org.id, n)),
    ]);
    const all = await run(t.token, ["events", "list", "--json"]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.json().data.map((e: { data: { n: number } }) => e.data.n)).toEqual([1, 2, 3, 4, 5]);
    const firstId = all.json().data[0].id;
    const after = await run(t.token, ["events", "list", "--json", "--after", firstId, "--type", "device.online", "--type", "webhook.test"]);
    expect(after.json().data.map((e: { data: { n: number } }) => e.data.n)).toEqual([2, 3, 4, 5]);
    const byNumber = await run(t.token, ["events", "list", "--json", "--number", sim.number]);
    expect(byNumber.json().data.map((e: { type: string }) => e.type)).toEqual(["message.received"]);
    expect((await run(t.token, ["events", "list", "--json", "--device", "42"])).json().data.length).toBe(1);
    const paged = await run(t.token, ["events", "list", "--json", "--limit", "2", "--all"]);
    expect(paged.json().data.length).toBe(5);
    expect(paged.json().meta).toMatchObject({ has_more: false, next_cursor: all.json().data[4].id });
    const human = await run(t.token, ["events", "list", "--limit", "2"]);
    expect(human.stdout).toContain("message.received");
    expect(human.stdout).toContain("+15550001111 → ");
    expect(human.stdout).toContain(`next: --after ${all.json().data[1].id} (more follow)`);
    // The server's refusals come back as one sentence, exit 1; a bad flag is a usage error.
    const bad = await run(t.token, ["events", "list", "--type", "nonsense"]);
    expect([bad.code, bad.stdout]).toEqual([1, ""]);
    expect(bad.stderr).toContain("event types");
    expect((await run(t.token, ["events", "list", "--limit", "501"])).code).toBe(2);
  }, 60_000);

  test("the human view says what a number's and a SIM's events mean (it printed their JSON cut at 100 characters)", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await attachNumber(ctx, t.org.id);
    const lock = { organization_id: t.org.id, team_id: null, user_id: 1, locked_until: "2026-11-30T10:00:00.000Z", release_on_message: false, sender: null };
    await append(ctx, [
      testEvent(t.org.id, 1, { type: "number.locked", hostedSimId: sim.id, payload: { hosted_sim_id: sim.id, number: sim.number, locked: true, lock } }),
      testEvent(t.org.id, 2, {
        type: "number.unlocked",
        hostedSimId: sim.id,
        payload: { hosted_sim_id: sim.id, number: sim.number, locked: false, lock: null, reason: "expired" },
      }),
      testEvent(t.org.id, 3, {
        type: "sim.deactivated",
        deviceId: 7,
        payload: {
          device_id: 7,
          sim_card: { id: 3, sim_slot: 1, phone_number: "+15550002222", status: "inactive", hosted_sim_id: null },
          reason: "missing_from_heartbeats",
        },
      }),
      testEvent(t.org.id, 4, { type: "config.changed", deviceId: 7, payload: { device_id: 7, config_version: 5 } }),
    ]);
    const human = (await run(t.token, ["events", "list"])).stdout;
    for (const said of [
      `${sim.number} locked until 2026-11-30T10:00:00.000Z`,
      `${sim.number} unlocked (expired)`,
      "device 7 SIM slot 1 +15550002222 (missing_from_heartbeats)",
      "device 7 config version 5",
    ])
      expect(human).toContain(said);
  }, 60_000);
});

describe("simhost events tail", () => {
  test("a --cursor-file in a folder that does not exist is refused before anything is followed (it failed at the first event)", async () => {
    const t = await createTenant(ctx.sql);
    const missing = join(mkdtempSync(join(tmpdir(), "simhost-cursor-")), "no", "such", "cursor");
    const r = await run(t.token, ["events", "tail", "--cursor-file", missing]);
    expect([r.code, r.stderr.trim()]).toEqual([1, `--cursor-file: cannot write in ${join(missing, "..")} (it does not exist, or is not writable).`]);
  });

  test("prints new events as they come; rides out a server restart; a restarted tail resumes from its cursor file, nothing twice", async () => {
    const t = await createTenant(ctx.sql);
    await append(ctx, [testEvent(t.org.id, 0)]); // before the tail: not printed (from now on)
    const cursorFile = join(mkdtempSync(join(tmpdir(), "simhost-tail-")), "cursor");
    const args = ["--url", url, "--token", t.token, "events", "tail", "--json", "--cursor-file", cursorFile, "--wait", "20"];
    const waiting = (n: number) => eventually(() => ctx.services.eventWaiters.size() >= n, 20_000, "the tail's wait");
    const printed = (out: string) =>
      out
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line).data.n as number);

    const cli = spawnCli(args, env);
    await cli.waitFor("stderr", /from now on/);
    await waiting(1);
    await append(ctx, [testEvent(t.org.id, 1), testEvent(t.org.id, 2)]);
    await cli.waitFor("stdout", /"n":2/);

    // The server goes away (the waiting call is cut) and comes back on the same port; events appended meanwhile are printed once it is back.
    await server.stop(true);
    await cli.waitFor("stderr", /retrying in/);
    await append(ctx, [testEvent(t.org.id, 3)]);
    serve();
    await cli.waitFor("stdout", /"n":3/, 30_000);
    await waiting(1);
    await append(ctx, [testEvent(t.org.id, 4)]);
    await cli.waitFor("stdout", /"n":4/);
    cli.proc.kill("SIGTERM");
    expect(await cli.exited()).toBe(0);
    expect(printed(cli.out.stdout)).toEqual([1, 2, 3, 4]);
    expect(readFileSync(cursorFile, "utf8").trim()).toMatch(/^evt_/);

    // Appended while no tail runs: the next one starts from the file and prints only these.
    await append(ctx, [testEvent(t.org.id, 5), testEvent(t.org.id, 6)]);
    const again = spawnCli([...args, "--count", "2"], env);
    expect(await again.exited(), again.out.stderr).toBe(0);
    expect(printed(again.out.stdout)).toEqual([5, 6]);
  }, 90_000);

  test("a first tail stopped during its first wait resumes from where it started, not from a later 'now'", async () => {
    const t = await createTenant(ctx.sql);
    const cursorFile = join(mkdtempSync(join(tmpdir(), "simhost-tail-")), "cursor");
    const args = ["--url", url, "--token", t.token, "events", "tail", "--json", "--cursor-file", cursorFile, "--wait", "20"];
    const first = spawnCli(args, env);
    await eventually(() => ctx.services.eventWaiters.size() >= 1, 20_000, "the tail's wait");
    first.proc.kill("SIGTERM");
    expect(await first.exited()).toBe(0);
    // Appended while no tail runs: the next one prints it.
    await append(ctx, [testEvent(t.org.id, 7)]);
    const again = spawnCli([...args, "--count", "1"], env);
    expect(await again.exited(), again.out.stderr).toBe(0);
    expect(JSON.parse(again.out.stdout.trim()).data.n).toBe(7);
  }, 60_000);

  test("a tail whose saved cursor retention has overtaken stops with what to do, exit 1, instead of skipping the removed events", async () => {
    const t = await createTenant(ctx.sql);
    await append(ctx, [testEvent(t.org.id, 1), testEvent(t.org.id, 2)]);
    const [first] = (await run(t.token, ["events", "list", "--json"])).json().data as { id: string }[];
    const cursorFile = join(mkdtempSync(join(tmpdir(), "simhost-tail-")), "cursor");
    writeFileSync(cursorFile, `${first!.id}\n`);
    await ctx.sql`update events set created_at = now() - interval '40 days' where organization_id = ${t.org.id}`;
    await deleteEventsBefore(ctx.sql, new Date(Date.now() - 30 * 86_400_000));
    const tail = spawnCli(["--url", url, "--token", t.token, "events", "tail", "--json", "--cursor-file", cursorFile, "--wait", "1"], env);
    expect(await tail.exited()).toBe(1);
    expect(tail.out.stdout).toBe("");
    expect(tail.out.stderr).toContain(`The events after ${first!.id} are gone`);
    expect(tail.out.stderr).toContain(`without the cursor in ${cursorFile}`);
  }, 60_000);
});
