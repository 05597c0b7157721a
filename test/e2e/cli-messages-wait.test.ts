import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createTenant } from "../fixtures";
import { eventually } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";
import { attachNumber, cliEnv, runCli, spawnCli } from "./cli-helpers";

/**
 * Issue 17 item 4: `simhost messages wait` against a served app whose jobs run, with the SMS
 * injected meanwhile by the provider emulator (`device-sim provider inject`, a signed callback).
 */
const ROOT = join(import.meta.dir, "../..");
/**
 * Bun closes a connection idle this long (Elysia's default: 30 s); short here, so the test of a
 * longer wait is quick. Bun's sockets check idle timeouts every 4 s and round up to those sweeps:
 * 5 s closes an idle connection between 4 and 8 s after its last activity. Not less: 1 to 4 s
 * closes it at the next sweep, which may fall while a request is still being authenticated,
 * before its route extends the timeout (a CI run saw ECONNRESET so).
 */
const IDLE_SECONDS = 5;
/** Longer than any idle connection lives (see above). */
const LONGER_THAN_IDLE_SECONDS = 10;
let server: { ctx: TestContext; url: string; env: Record<string, string>; run: (token: string, args: string[]) => ReturnType<typeof runCli> };
beforeAll(async () => {
  const ctx = await createTestContext();
  ctx.app.listen({ port: 0, hostname: "127.0.0.1", idleTimeout: IDLE_SECONDS });
  ctx.services.start();
  const url = `http://127.0.0.1:${ctx.app.server!.port}`;
  const env = cliEnv(ctx);
  server = { ctx, url, env, run: (token, args) => runCli(["--url", url, "--token", token, ...args], { env }) };
}, 60_000);
afterAll(async () => {
  await server?.ctx.app.stop();
  await server?.ctx.close();
});

async function inject(to: string, body: string, from = "+15557654321") {
  const { config } = server.ctx;
  const args = ["provider", "inject", "--server", server.url, "--public-url", config.PUBLIC_URL, "--token", config.PROVIDER_AUTH_TOKEN];
  const proc = Bun.spawn([process.execPath, "device-sim/main.ts", ...args, "--to", to, "--from", from, "--body", body], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  expect(code, stderr).toBe(0);
}

/** Starts `messages wait` and resolves once its call waits on the server (so the SMS comes after the call's start). */
async function startWait(token: string, simId: number, args: string[]) {
  const cli = spawnCli(["--url", server.url, "--token", token, "messages", "wait", ...args], server.env);
  await eventually(() => server.ctx.services.waiters.size(simId) === 1 || cli.proc.exitCode !== null, 20_000, "the CLI's wait");
  return cli;
}

describe("simhost messages wait", () => {
  test("--code by E.164 number: prints only the code, exit 0; messages without a code are passed over", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const cli = await startWait(token, sim.id, ["--number", sim.number, "--code", "--timeout", "30"]);
    await inject(sim.number, "Your order ships on 03/12, total $48.29");
    await inject(sim.number, "Your Acme verification code is 482-913. Do not share it.");
    expect(await cli.exited(), cli.out.stderr).toBe(0);
    expect(cli.out.stdout, cli.out.stderr).toBe("482913\n");
  }, 60_000);

  test("by id with --from, --contains and --json: the whole message", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const cli = await startWait(token, sim.id, ["--number", String(sim.id), "--from", "+15550009999", "--contains", "welcome", "--json", "--timeout", "30"]);
    await inject(sim.number, "Welcome aboard", "+15550001234");
    await inject(sim.number, "Hello and WELCOME", "+15550009999");
    expect(await cli.exited(), cli.out.stderr).toBe(0);
    expect(JSON.parse(cli.out.stdout).data).toMatchObject({ hosted_sim_id: sim.id, from: "+15550009999", text: "Hello and WELCOME" });
  }, 60_000);

  test("without --code: prints the text; nothing in time: exit 1 with a sentence on stderr; --timeout over 120: usage error (exit 2)", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const cli = await startWait(token, sim.id, ["--number", sim.number]);
    await inject(sim.number, "Plain hello");
    expect(await cli.exited(), cli.out.stderr).toBe(0);
    expect(cli.out.stdout, cli.out.stderr).toBe("Plain hello\n");

    const none = await server.run(token, ["messages", "wait", "--number", sim.number, "--code", "--timeout", "1"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain("No message with a code arrived within 1 s.");
    const usage = await server.run(token, ["messages", "wait", "--number", sim.number, "--timeout", "121"]);
    expect(usage.code).toBe(2);
  }, 60_000);

  test("a wait longer than the HTTP server's idle timeout is answered, not cut", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const started = Date.now();
    const seconds = LONGER_THAN_IDLE_SECONDS;
    const none = await server.run(token, ["messages", "wait", "--number", String(sim.id), "--timeout", String(seconds), "--json"]);
    expect(none.stderr).toContain(`No message arrived within ${seconds} s.`);
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout)).toEqual({ data: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(seconds * 1000);
  }, 60_000);
});
