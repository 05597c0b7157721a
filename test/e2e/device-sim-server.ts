import { afterAll, beforeAll } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { type Provider, type ProviderOptions, startProvider } from "../../device-sim/provider";
import { freshDatabase } from "../helpers";

export const ROOT = join(import.meta.dir, "../..");
// CI's embedded pass sets DATABASE_URL to "": the spawned server still gets a PostgreSQL database of its own.
const BASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
export const PROVIDER_TOKEN = "device-sim-e2e-provider-token";
export const PROVIDER_NUMBER = "+15005550006";

export async function freePort() {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 200): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await Bun.sleep(everyMs);
  }
}

/**
 * The real server (`bun server/main.ts`) as a child process on its own fresh PostgreSQL
 * database, so the simulator meets it exactly as it would in production: over HTTP and
 * WebSocket only. `restart` stops it hard and starts it again on the same port and data.
 */
export async function startTestServer(env: Record<string, string> = {}) {
  let databaseUrl: string;
  try {
    databaseUrl = await freshDatabase(BASE_URL);
  } catch {
    console.warn(`device-sim e2e skipped: PostgreSQL not reachable at ${new URL(BASE_URL).host}`);
    return undefined;
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const spawn = () =>
    Bun.spawn([process.execPath, "server/main.ts"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        PORT: String(port),
        PUBLIC_URL: url,
        DATABASE_URL: databaseUrl,
        PROVIDER_AUTH_TOKEN: PROVIDER_TOKEN,
        PROVIDER_NUMBER,
        LOG_LEVEL: "warn",
        DATA_DIR: join(ROOT, ".data", `device-sim-${port}`),
        ...env,
      },
      stdout: "ignore",
      stderr: "ignore",
    });
  const healthy = async () => {
    try {
      return (await fetch(`${url}/api/health`)).ok;
    } catch {
      return false;
    }
  };
  let proc = spawn();
  if (!(await waitFor(healthy, 30_000))) throw new Error("server did not start");
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {}, types: { int8: { to: 20, from: [20], serialize: String, parse: Number } } as never });
  return {
    url,
    sql,
    async stop(signal: "SIGKILL" | "SIGTERM" = "SIGKILL") {
      proc.kill(signal);
      await proc.exited;
    },
    async start() {
      proc = spawn();
      if (!(await waitFor(healthy, 30_000))) throw new Error("server did not restart");
    },
    async close() {
      // Graceful first (sockets get 4200); a server still draining after 5 s is cut.
      proc.kill("SIGTERM");
      if ((await Promise.race([proc.exited.then(() => true), Bun.sleep(5000).then(() => false)])) === false) {
        proc.kill("SIGKILL");
        await proc.exited;
      }
      // Bounded: on a loaded machine a query still running must not hold the suite's hook past its deadline.
      await sql.end({ timeout: 5 });
      const admin = postgres(BASE_URL, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${new URL(databaseUrl).pathname.slice(1)}" with (force)`).catch(() => {});
      await admin.end({ timeout: 5 });
    },
  };
}
export type TestServer = NonNullable<Awaited<ReturnType<typeof startTestServer>>>;

/** JSON over HTTP with a Bearer token, failing loudly on anything but the expected status. */
export async function call(server: TestServer, token: string, method: string, path: string, body?: unknown, expected = [200, 201, 202]) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json().catch(() => null)) as any;
  if (!expected.includes(res.status)) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/**
 * A test file's real server and the simulator's SMS provider beside it (unless `provider` is
 * false; otherwise its options), started before the file's tests and stopped after them: the
 * provider calls the server's callbacks, and the server's outbound provider API calls
 * (PROVIDER_API_URL) reach the provider. `env`: the server's extra environment. `available` is
 * false when no PostgreSQL is reachable; the tests then return at once (a warning says why).
 */
export function simulatorServer(o: { env?: Record<string, string>; provider?: Partial<ProviderOptions> | false } = {}) {
  const s = { available: false } as { available: boolean; server: TestServer; provider: Provider };
  beforeAll(async () => {
    const providerPort = o.provider === false ? 0 : await freePort();
    const started = await startTestServer({ ...(providerPort ? { PROVIDER_API_URL: `http://127.0.0.1:${providerPort}` } : {}), ...o.env });
    if (!started) return;
    s.server = started;
    if (o.provider !== false) {
      s.provider = startProvider({
        port: providerPort,
        serverUrl: started.url,
        publicUrl: started.url,
        authToken: PROVIDER_TOKEN,
        providerNumber: PROVIDER_NUMBER,
        ...o.provider,
      });
    }
    s.available = true;
  }, 60_000);
  afterAll(async () => {
    if (!s.available) return;
    s.provider?.stop();
    await s.server.close();
  }, 60_000);
  return s;
}
