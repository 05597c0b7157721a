import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { Webhook } from "standardwebhooks";
import { randomString } from "../../server/lib/crypto";
import { buildRequest, type RequestOptions, readResponse } from "../helpers";

/**
 * Real processes for the fault suite: the server (`bun server/main.ts`), a private
 * redis-server and a private PostgreSQL cluster the test may stop and start at will, and a
 * webhook receiver verifying signatures with the standardwebhooks library.
 */

export const ROOT = join(import.meta.dir, "../..");
export const PROVIDER_TOKEN = "fault-suite-provider-token";
export const PROVIDER_NUMBER = "+15005550006";
/** The machine's PostgreSQL and Redis, when CI gives them. */
export const sharedDatabaseUrl = process.env.DATABASE_URL;
export const sharedRedisUrl = process.env.REDIS_URL;

export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port as number;
  probe.stop(true);
  return port;
}

/** Polls `ok` until it holds; throws naming `what` after `ms`. */
export async function until<T>(what: string, ok: () => T | Promise<T>, ms = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await ok();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
    await Bun.sleep(25);
  }
}

export const pgTypes = { int8: { to: 20, from: [20], serialize: String, parse: Number } } as never;

export function connect(url: string, max = 4) {
  return postgres(url, { max, onnotice: () => {}, types: pgTypes, connect_timeout: 3 });
}

export type ServerProcess = {
  url: string;
  port: number;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Everything the process wrote (warn and above with LOG_LEVEL=warn). */
  output: () => string;
  exited: () => boolean;
  kill(signal?: "SIGKILL" | "SIGTERM"): Promise<void>;
};

/** `bun server/main.ts` on a port; resolves once /api/health answers (200 or 503). */
export async function startServer(env: Record<string, string | undefined>, port = freePort()): Promise<ServerProcess> {
  const url = `http://127.0.0.1:${port}`;
  const base: Record<string, string> = {};
  for (const k of ["PATH", "HOME", "TMPDIR"]) if (process.env[k]) base[k] = process.env[k]!;
  const proc = Bun.spawn([process.execPath, "server/main.ts"], {
    cwd: ROOT,
    env: {
      ...base,
      PORT: String(port),
      PUBLIC_URL: url,
      PROVIDER_AUTH_TOKEN: PROVIDER_TOKEN,
      PROVIDER_NUMBER,
      WEBHOOK_ALLOW_PRIVATE: "true",
      LOG_LEVEL: "warn",
      ...Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)),
    } as Record<string, string>,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  let done = false;
  const drain = async (s: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of s) out = (out + decoder.decode(chunk)).slice(-200_000);
  };
  void drain(proc.stdout);
  void drain(proc.stderr);
  void proc.exited.then(() => (done = true));
  await until(
    `server on ${port} to answer /api/health`,
    async () => {
      if (done) throw new Error(`server exited early (${proc.exitCode}): ${out.slice(-2000)}`);
      return (await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) })).status > 0;
    },
    60_000,
  ).catch((e) => {
    proc.kill("SIGKILL");
    throw e;
  });
  return {
    url,
    port,
    proc,
    output: () => out,
    exited: () => done,
    async kill(signal = "SIGKILL") {
      if (!done) proc.kill(signal);
      await proc.exited;
    },
  };
}

/** JSON over HTTP against a server process. */
export async function call(base: string, method: string, path: string, o: { token?: string; body?: unknown; timeoutMs?: number } = {}) {
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
    signal: AbortSignal.timeout(o.timeoutMs ?? 15_000),
  });
  const text = await res.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, headers: res.headers, body, text };
}

const which = (bin: string) => Bun.which(bin) ?? null;

/** A redis-server of the test's own, without persistence, that can be stopped and started again. */
export async function startRedis(): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void> } | string> {
  const bin = which("redis-server");
  if (!bin) return "redis-server is not installed";
  const port = freePort();
  let proc: Subprocess | undefined;
  const ping = async () => {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).catch(() => null);
    socket?.end();
    return socket !== null;
  };
  async function start() {
    proc = Bun.spawn([bin!, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdout: "ignore", stderr: "ignore" });
    await until(`redis-server on ${port}`, ping, 10_000);
  }
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    async stop() {
      proc?.kill("SIGKILL");
      await proc?.exited;
    },
  };
}

function postgresBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : null;
}

/**
 * A PostgreSQL cluster of the test's own (initdb in a temporary folder, run as the postgres OS
 * user), never the shared one: the test stops it to cut the server off its database.
 */
export async function startPostgresCluster(): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void>; destroy(): Promise<void> } | string> {
  const bin = postgresBin();
  if (!bin) return "no PostgreSQL binaries under /usr/lib/postgresql";
  if (process.getuid?.() !== 0 || !which("runuser")) return "needs root and runuser to run initdb as the postgres user";
  const dir = mkdtempSync(join(tmpdir(), "simhost-faults-pg-"));
  const port = freePort();
  const asPostgres = async (args: string[]) => {
    const p = Bun.spawn(["runuser", "-u", "postgres", "--", ...args], { stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    if (code !== 0) throw new Error(`${args[0]} failed (${code}): ${err.slice(-500)}`);
  };
  await Bun.spawn(["chown", "postgres:postgres", dir]).exited;
  await asPostgres([join(bin, "initdb"), "-D", join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const ctl = (action: "start" | "stop") =>
    asPostgres(
      action === "start"
        ? [
            join(bin, "pg_ctl"),
            "-D",
            join(dir, "data"),
            "-l",
            join(dir, "log"),
            "-w",
            "-t",
            "30",
            "-o",
            `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
            "start",
          ]
        : [join(bin, "pg_ctl"), "-D", join(dir, "data"), "-m", "immediate", "-w", "stop"],
    );
  await ctl("start");
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    start: () => ctl("start"),
    stop: () => ctl("stop"),
    async destroy() {
      await ctl("stop").catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Delivery = { id: string; type: string; messageId: number | null; verified: boolean; at: number };

/**
 * A webhook receiver on a port of its own that can be switched between behaviours, and taken
 * down and brought back on the same port. Every request is verified with standardwebhooks.
 */
export function startWebhookReceiver() {
  const port = freePort();
  const deliveries: Delivery[] = [];
  const attempts: { id: string; status: number; verified: boolean }[] = [];
  const secrets: string[] = [];
  let respond: (req: Request, n: number) => Response | Promise<Response> = () => new Response("ok");
  let server: ReturnType<typeof Bun.serve> | undefined;
  let count = 0;
  function up() {
    server = Bun.serve({
      port,
      hostname: "127.0.0.1",
      idleTimeout: 60,
      async fetch(req) {
        const body = await req.text();
        const headers = Object.fromEntries(req.headers);
        const verified = secrets.some((s) => {
          try {
            new Webhook(s).verify(body, headers);
            return true;
          } catch {
            return false;
          }
        });
        const event = JSON.parse(body) as { id: string; type: string; data?: { id?: number; message?: { id?: number } } };
        const answer = await respond(req, ++count);
        attempts.push({ id: req.headers.get("webhook-id") ?? "", status: answer.status, verified });
        // Only a 2xx answer the sender was still waiting for counts as delivered.
        if (answer.status < 300 && !req.signal.aborted)
          deliveries.push({
            id: req.headers.get("webhook-id") ?? "",
            type: event.type,
            messageId: event.data?.message?.id ?? event.data?.id ?? null,
            verified,
            at: Date.now(),
          });
        return answer;
      },
    });
  }
  up();
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    attempts,
    requests: () => count,
    /** Adds a secret a delivery may verify with (one per integration sending here). */
    setSecret: (s: string) => secrets.push(s),
    behave: (fn: typeof respond) => (respond = fn),
    down: () => server?.stop(true),
    up,
  };
}

export const redisPrefix = () => `simhost-fault-${randomString(8)}:`;

/** The fixtures' request shape, over HTTP to a server process (for test/fixtures-devices.ts). */
export function httpContext(base: () => string) {
  return {
    config: {
      PROVIDER_AUTH_TOKEN: PROVIDER_TOKEN,
      PROVIDER_NUMBER,
      get PUBLIC_URL() {
        return base();
      },
    },
    request: (method: string, path: string, o: RequestOptions = {}) =>
      fetch(buildRequest(base(), method, path, o, { signal: AbortSignal.timeout(15_000) })).then(readResponse),
  };
}

/**
 * An organization with an active BYOS device and a webhook integration to `hookUrl` mapped
 * `always` to a team: every SMS the device submits becomes one message.received delivery.
 */
export async function createWorld(sql: postgres.Sql, base: () => string, hookUrl: string, hook: Record<string, unknown> = {}) {
  const { createTenant } = await import("../fixtures");
  const { activeDevice } = await import("../fixtures-devices");
  const ctx = httpContext(base);
  const { org, token } = await createTenant(sql, { plan: "enterprise" });
  const { device, numbers } = await activeDevice(ctx as never, token);
  const [team] = await sql<{ id: number }[]>`insert into teams (organization_id, name) values (${org.id}, ${`team-${randomString(6)}`}) returning id`;
  const made = await ctx.request("POST", "/api/webhook-integrations", { token, body: { name: "fault hook", url: hookUrl, ...hook } });
  if (made.status !== 201) throw new Error(`webhook create failed: ${made.status} ${made.text}`);
  const { id, secret } = made.body.data as { id: number; secret: string };
  const mapped = await ctx.request("POST", `/api/webhook-integrations/${id}/mappings`, { token, body: { team_id: team!.id, forwarding_mode: "always" } });
  if (mapped.status !== 201) throw new Error(`mapping failed: ${mapped.status} ${mapped.text}`);
  return { org, token, device, number: numbers[0]!, integrationId: id, secret, ctx };
}

/** SMS number `i` of a run: the same body and message_id every time it is (re)sent. */
export function smsOf(run: string, i: number) {
  return {
    from: "+15550001111",
    body: `${run} sms ${i}`,
    message_id: `${run.slice(0, 24)}${i.toString(16).padStart(12, "0")}`,
    received_at: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
    sim_slot: 1,
  };
}
