import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN_HEADER_BYTES } from "../../server/lib/request-limits";
import { expectErrorShape, freshDatabase, migratedEmbeddedDataDir } from "../helpers";
import { freePort, waitFor } from "./device-sim-server";

/**
 * The request limits against the real server process on loopback, started as `npm start` starts
 * it (server/runtime.sh: Bun's header limit raised): oversized bodies, declared or streamed, and
 * oversized headers get the API.md §1 error shape, and 20 of them at once leave memory flat.
 */
const ROOT = join(import.meta.dir, "../..");
const MB = 1024 * 1024;
let proc: Bun.Subprocess;
let url: string;

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const database = process.env.DATABASE_URL ? { DATABASE_URL: await freshDatabase(process.env.DATABASE_URL) } : {};
  // Started as `npm start` starts it (server/runtime.sh: Bun's header limit raised past ours, the allocator's settings).
  proc = Bun.spawn(["sh", "server/runtime.sh", "server/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      BUN: process.execPath,
      REDIS_URL: "",
      LOG_LEVEL: "warn",
      // On the embedded database: one migrated already (creating one took over the 30 s below under load).
      DATA_DIR: process.env.DATABASE_URL ? mkdtempSync(join(tmpdir(), "simhost-limits-")) : await migratedEmbeddedDataDir(),
      ...database,
      PORT: String(port),
      PUBLIC_URL: url,
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  const healthy = () =>
    fetch(`${url}/api/health`)
      .then((r) => r.status < 500)
      .catch(() => false);
  if (!(await waitFor(healthy, 30_000, 100))) throw new Error("server did not start");
}, 60_000);

afterAll(async () => {
  proc?.kill("SIGKILL");
  await proc?.exited;
});

/** Resident memory of the server process, from the kernel's own account. */
function rssBytes(): number {
  const line = readFileSync(`/proc/${proc.pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  return Number(line?.[1]) * 1024;
}

/** A login body of `bytes` that would parse: what the server used to read whole before answering. */
const loginBody = (bytes: number) => new TextEncoder().encode(`{"email":"a@b.co","password":"${"x".repeat(bytes - 40)}"}`);

/** The same bytes without a Content-Length: Transfer-Encoding chunked, 64 KiB per chunk. */
function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + 65536));
      offset += 65536;
    },
  });
}

async function post(path: string, body: Uint8Array | ReadableStream<Uint8Array>, contentType = "application/json") {
  const res = await fetch(`${url}${path}`, { method: "POST", body, headers: { "content-type": contentType }, duplex: "half" } as RequestInit);
  return { status: res.status, body: await res.json().catch(() => null) };
}

describe("request limits on a real server", () => {
  test("oversized bodies, declared or chunked, JSON or form, answer 413 in the error shape", async () => {
    const body = loginBody(MB);
    const form = new TextEncoder().encode(`From=%2B15550001111&Body=${"x".repeat(MB)}`);
    for (const [path, bytes, type] of [
      ["/api/auth/login", body, "application/json"],
      ["/api/provider/sms", form, "application/x-www-form-urlencoded"],
    ] as const) {
      for (const sent of [bytes, chunked(bytes)]) {
        const res = await post(path, sent, type);
        expect(res.status).toBe(413);
        expectErrorShape(res.body, "payload_too_large");
      }
    }
  });

  test("a protected route: a declared oversized body is 413 before authentication; a streamed one is never read without a caller", async () => {
    const body = loginBody(MB);
    const declared = await post("/api/teams", body);
    expect(declared.status).toBe(413);
    expectErrorShape(declared.body, "payload_too_large");
    const streamed = await post("/api/teams", chunked(body));
    expect(streamed.status).toBe(401);
    expectErrorShape(streamed.body, "unauthenticated");
  });

  test("server/runtime.sh starts Bun with its header limit at BUN_HEADER_BYTES, the bound MAX_HEADER_BYTES is configured under", () => {
    const args = readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").split("\0");
    expect(args).toContain(`--max-http-header-size=${BUN_HEADER_BYTES}`);
  });

  test("a 60 KB Authorization header answers 413 in the error shape, not Bun's empty answer", async () => {
    const res = await fetch(`${url}/api/me`, { headers: { authorization: `Bearer ${"x".repeat(60_000)}` } });
    expect(res.status).toBe(413);
    expectErrorShape(await res.json(), "payload_too_large");
  });

  test("20 parallel oversized requests keep the server within 50 MB of its idle memory", async () => {
    const body = loginBody(8 * MB);
    await post("/api/auth/login", loginBody(200)); // warm the route
    const idle = rssBytes();
    let peak = idle;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes());
    }, 10);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post("/api/auth/login", i % 2 === 0 ? body : chunked(body))));
    clearInterval(sampler);
    peak = Math.max(peak, rssBytes());
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(413));
    expect((peak - idle) / MB).toBeLessThan(50);
  }, 60_000);
});
