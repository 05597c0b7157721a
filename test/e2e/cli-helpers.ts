import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "../helpers";

const ROOT = join(import.meta.dir, "../..");

export type CliResult = { code: number; stdout: string; stderr: string; json: () => any };

/** Runs `bun cli/main.ts ...args` as a subprocess; never through a terminal, so no colours or prompts. */
export async function runCli(args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string } = {}): Promise<CliResult> {
  const proc = Bun.spawn([process.execPath, "cli/main.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", ...opts.env } as Record<string, string>,
    stdin: opts.stdin === undefined ? "ignore" : new TextEncoder().encode(opts.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return {
    code,
    stdout,
    stderr,
    json: () => {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`stdout is not JSON (exit ${code}): ${stdout}\nstderr: ${stderr}`);
      }
    },
  };
}

/**
 * The environment that points admin commands at the test context's database (its DATABASE_URL,
 * else the embedded one under its DATA_DIR, served on a socket while the context runs) and
 * keeps saved credentials in a folder of the test's own.
 */
export function cliEnv(ctx: TestContext, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: ctx.config.DATABASE_URL ?? "",
    DATA_DIR: ctx.config.DATA_DIR,
    // Revocations made by admin commands reach the context like a running server (server/admin/database.ts).
    REDIS_URL: ctx.config.REDIS_URL ?? "",
    REDIS_PREFIX: ctx.config.REDIS_PREFIX,
    XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "simhost-cli-config-")),
    SIMHOST_URL: "",
    SIMHOST_TOKEN: "",
    ...extra,
  };
}

/** Serves the context's app on a free local port; returns its URL. */
export function listen(ctx: TestContext): string {
  ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  return `http://127.0.0.1:${ctx.app.server!.port}`;
}

let counter = 0;
/** An E.164 number no other test of this process uses. */
export function uniqueNumber(): string {
  counter += 1;
  return `+1555${String(Date.now() % 1_000_000).padStart(6, "0")}${String(counter).padStart(3, "0")}`.slice(0, 16);
}

/**
 * A live server for the CLI's server commands: the context served on a free port, and `run`
 * to call the CLI against it with a token.
 */
export async function startCliServer() {
  const { createTestContext } = await import("../helpers");
  const ctx = await createTestContext();
  const url = listen(ctx);
  const env = cliEnv(ctx);
  return {
    ctx,
    url,
    env,
    run: (token: string, args: string[]) => runCli(["--url", url, "--token", token, ...args], { env }),
    async close() {
      await ctx.app.stop();
      await ctx.close();
    },
  };
}

/** A pool number attached to an organization, written straight to the database. */
export async function attachNumber(ctx: TestContext, orgId: number, opts: { alias?: string; type?: "shared" | "virtual" } = {}) {
  const number = uniqueNumber();
  const [sim] = await ctx.sql<{ id: number }[]>`
    insert into hosted_sims (number, provider, type, shared_max_orgs) values (${number}, 'test', ${opts.type ?? "shared"}, 5) returning id`;
  await ctx.sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id, alias) values (${sim!.id}, ${orgId}, ${opts.alias ?? null})`;
  return { id: sim!.id, number };
}

/** A long-running CLI command (tail, watch): output read as it comes, waited on with a deadline. */
export function spawnCli(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, "cli/main.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", ...env } as Record<string, string>,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = { stdout: "", stderr: "" };
  const pump = async (stream: ReadableStream<Uint8Array>, key: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out[key] += decoder.decode(chunk, { stream: true });
  };
  const pumped = Promise.all([pump(proc.stdout, "stdout"), pump(proc.stderr, "stderr")]);
  return {
    proc,
    out,
    async waitFor(key: "stdout" | "stderr", re: RegExp, ms = 20_000) {
      const deadline = Date.now() + ms;
      while (!re.test(out[key])) {
        if (proc.exitCode !== null) throw new Error(`CLI exited (${proc.exitCode}) before ${re}: ${out.stderr}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}; stdout: ${out.stdout}; stderr: ${out.stderr}`);
        await Bun.sleep(20);
      }
    },
    async exited(ms = 20_000) {
      const code = await Promise.race([proc.exited, Bun.sleep(ms).then(() => "timeout" as const)]);
      if (code === "timeout") {
        proc.kill();
        throw new Error(`CLI did not exit; stdout: ${out.stdout}; stderr: ${out.stderr}`);
      }
      await pumped;
      return code;
    },
  };
}
