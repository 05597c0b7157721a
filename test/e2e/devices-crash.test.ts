import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { createTenant } from "../fixtures";
import { activeDevice, smsBody, waitFor } from "../fixtures-devices";
import { buildRequest, freshDatabase, type RequestOptions, readResponse } from "../helpers";

const ROOT = join(import.meta.dir, "../..");
const BASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const TOKEN = "crash-test-provider-token";

async function freePort() {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** The real server (`bun server/main.ts`) as a child process, ready when /api/health answers. */
async function startServer(databaseUrl: string, port: number) {
  const proc = Bun.spawn([process.execPath, "server/main.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: databaseUrl,
      PROVIDER_AUTH_TOKEN: TOKEN,
      LOG_LEVEL: "warn",
      DATA_DIR: join(ROOT, ".data", `crash-${port}`),
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  const up = await waitFor(async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/api/health`)).status < 600;
    } catch {
      return false;
    }
  }, 30_000);
  if (!up) throw new Error("server did not start");
  return proc;
}

let databaseUrl = "";
let sql: postgres.Sql;
let available = true;

beforeAll(async () => {
  try {
    databaseUrl = await freshDatabase(BASE_URL);
  } catch {
    available = false;
    return;
  }
  sql = postgres(databaseUrl, { max: 2, onnotice: () => {}, types: { int8: { to: 20, from: [20], serialize: String, parse: Number } } as never });
});
afterAll(async () => {
  if (!available) return;
  await sql.end();
  const admin = postgres(BASE_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${new URL(databaseUrl).pathname.slice(1)}" with (force)`).catch(() => {});
  await admin.end();
});

describe("crash safety of the SMS relay (real server, real PostgreSQL)", () => {
  test("SIGKILL right after the 202s loses nothing: after a restart every SMS is processed once", async () => {
    if (!available) return console.warn("PostgreSQL not reachable: crash-safety test skipped");
    const port = await freePort();
    let server = await startServer(databaseUrl, port);
    const base = `http://127.0.0.1:${port}`;
    const ctx = {
      config: { PROVIDER_AUTH_TOKEN: TOKEN, PROVIDER_NUMBER: "+15005550006", PUBLIC_URL: base } as never,
      request: (method: string, path: string, o: RequestOptions = {}) => fetch(buildRequest(base, method, path, o)).then(readResponse),
    };
    try {
      const { token } = await createTenant(sql, { plan: "pro" });
      const { device } = await activeDevice(ctx as never, token);
      const submissions = Array.from({ length: 400 }, () => smsBody());
      const answers = await Promise.all(submissions.map((body) => ctx.request("POST", `/api/byos/devices/${device.id}/sms`, { token, body })));
      server.kill("SIGKILL");
      await server.exited;
      expect(answers.every((a) => a.status === 202)).toBe(true);
      const [stored] = await sql<{ n: number }[]>`select count(*)::int as n from device_sms where device_id = ${device.id}`;
      expect(stored!.n).toBe(400);

      server = await startServer(databaseUrl, port);
      const done = await waitFor(async () => {
        const [row] = await sql<{ n: number }[]>`select count(*)::int as n from device_sms where device_id = ${device.id} and message_row_id is not null`;
        return row!.n === 400;
      }, 60_000);
      expect(done).toBe(true);
      const [messages] = await sql<{ n: number; distinct_ids: number }[]>`
        select count(*)::int as n, count(distinct external_id)::int as distinct_ids from messages where device_id = ${device.id}`;
      expect(messages).toEqual({ n: 400, distinct_ids: 400 });
      const [counter] = await sql<{ n: number }[]>`select messages_received_count::int as n from devices where id = ${device.id}`;
      expect(counter!.n).toBe(400);
    } finally {
      server.kill("SIGKILL");
      await server.exited;
    }
  }, 120_000);
});
