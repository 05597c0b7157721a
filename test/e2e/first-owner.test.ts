import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { FIRST_OWNER_EMAIL } from "../../server/bootstrap";
import { emptyEmbeddedDataDir, freshDatabase } from "../helpers";

const ROOT = join(import.meta.dir, "../..");

type Server = {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  url: string;
  output: () => string;
  /** What each stream carried: logs go to standard output, the owner's notice to standard error. */
  streams: () => { stdout: string; stderr: string };
  waitFor: (re: RegExp) => Promise<RegExpMatchArray>;
};
const running: Server[] = [];

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** `bun server/main.ts` as an operator starts it; stdout and stderr collected as they come. */
function startServer(env: Record<string, string>): Server {
  const port = freePort();
  const proc = Bun.spawn([process.execPath, "server/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: "", LOG_LEVEL: "info", ...env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const by = { stdout: "", stderr: "" };
  const pump = async (stream: ReadableStream<Uint8Array>, name: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      const part = decoder.decode(chunk, { stream: true });
      text += part;
      by[name] += part;
    }
  };
  void pump(proc.stdout, "stdout");
  void pump(proc.stderr, "stderr");
  const server: Server = {
    proc,
    url: `http://127.0.0.1:${port}`,
    output: () => text,
    streams: () => ({ ...by }),
    async waitFor(re) {
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline) {
        const m = text.match(re);
        if (m) return m;
        if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}):\n${text}`);
        await Bun.sleep(25);
      }
      throw new Error(`timed out waiting for ${re} in:\n${text}`);
    },
  };
  running.push(server);
  return server;
}

async function stop(server: Server) {
  server.proc.kill("SIGTERM");
  await server.proc.exited;
}

afterEach(async () => {
  for (const s of running.splice(0)) if (s.proc.exitCode === null) await stop(s);
});

/** A database nobody has used: a new PostgreSQL database, or a new embedded data folder. */
async function emptyDatabase(): Promise<{ env: Record<string, string>; connect: () => postgres.Sql }> {
  if (process.env.DATABASE_URL) {
    const url = await freshDatabase(process.env.DATABASE_URL);
    return { env: { DATABASE_URL: url }, connect: () => postgres(url, { max: 1 }) };
  }
  // A copy of a cluster nobody connected to since its creation (creating one per test took 5-30 s).
  const dataDir = await emptyEmbeddedDataDir();
  // While the server runs, its embedded database answers on this socket.
  const connect = () => postgres({ host: join(dataDir, "pg"), port: 5432, user: "postgres", database: "postgres", prepare: false, max: 1 });
  return { env: { DATABASE_URL: "", DATA_DIR: dataDir }, connect };
}

describe("first start on an empty database", () => {
  test("prints the owner's credentials once on standard error, outside the log stream, and they are the stored account", async () => {
    const db = await emptyDatabase();
    const first = startServer(db.env);
    const [, password] = await first.waitFor(/password\s+([0-9A-Za-z]{20})\n/);
    await first.waitFor(/simhost listening/);
    const { stdout, stderr } = first.streams();
    expect(stderr).toContain(`email         ${FIRST_OWNER_EMAIL}`);
    expect(stderr).toContain(`password      ${password}`);
    // Standard output is the JSON log stream: the password is nowhere in it, nor the notice.
    expect(stdout).not.toContain(password!);
    expect(stdout).not.toContain("owner account was created");
    // No structured log line carries the password.
    const logLines = first
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"));
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) expect(line).not.toContain(password!);
    // API.md §4: the provider's development values are printed at start (the log stream).
    const provider = logLines.map((l) => JSON.parse(l)).find((l) => String(l.msg).startsWith("SMS provider: development values"));
    expect(provider).toMatchObject({ PROVIDER_AUTH_TOKEN: "dev-provider-token", PROVIDER_NUMBER: "+15005550006", PROVIDER_API_URL: "http://127.0.0.1:3100" });

    const sql = db.connect();
    try {
      const [row] = await sql`
        select u.password_hash, m.role, o.name from users u
        join memberships m on m.user_id = u.id join organizations o on o.id = m.organization_id
        where u.email = ${FIRST_OWNER_EMAIL}`;
      expect(row).toMatchObject({ role: "owner", name: "My organization" });
      expect(await Bun.password.verify(password!, row!.password_hash)).toBe(true);
    } finally {
      await sql.end();
    }
    await stop(first);

    const second = startServer({
      ...db.env,
      PROVIDER_AUTH_TOKEN: "a-real-provider-token",
      PROVIDER_NUMBER: "+15550009999",
      PROVIDER_API_URL: "http://127.0.0.1:9",
    });
    await second.waitFor(/simhost listening/);
    const health = await fetch(`${second.url}/api/health`);
    expect(health.status).toBe(200);
    expect(second.output()).not.toContain(password!);
    expect(second.output()).not.toContain("owner account was created");
    expect(second.output()).not.toContain("development values");
  });
});

describe("start", () => {
  // The pool's connections open before the server listens, not under the first requests' load
  // (server/db/client.ts `warm`): a server that opened them lazily holds a handful at this point.
  test.skipIf(!process.env.DATABASE_URL)(
    "opens its whole database pool before it listens",
    async () => {
      const db = await emptyDatabase();
      const server = startServer(db.env);
      await server.waitFor(/simhost listening/);
      const sql = db.connect();
      try {
        const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
        expect(row!.n).toBeGreaterThanOrEqual(20);
      } finally {
        await sql.end();
      }
    },
    60_000,
  );
});
