import { describe, expect, test } from "bun:test";
import { plainHttpWarning, requestTimeoutMs, serverUrlProblem } from "../../cli/api-client";

// Address classification only: nothing here connects anywhere.
describe("the CLI's warning for credentials over plain http", () => {
  test("plain http to another host warns; https, and http to this machine, do not", () => {
    for (const url of ["http://simhost.example.test", "http://simhost.example.test:3000/", "http://10.1.2.3:3000", "http://[fd00::1]:3000"])
      expect([url, plainHttpWarning(url)]).toEqual([url, expect.stringContaining("plain http")]);
    for (const url of [
      "https://simhost.example.test",
      "http://localhost:3000",
      "http://LOCALHOST:3000",
      "http://api.localhost:3000",
      "http://127.0.0.1:3000",
      "http://127.10.0.5",
      "http://[::1]:3000",
    ])
      expect([url, plainHttpWarning(url)]).toEqual([url, null]);
  });
});

describe("a server URL needs its scheme", () => {
  test("host:port alone is refused (it parsed as a scheme, past the plain-http warning, or failed on the first request)", () => {
    for (const url of ["localhost:3000", "127.0.0.1:3000", "simhost.example.test:3000", "simhost.example.test", "ftp://simhost.example.test", "http://", ""])
      expect([url, serverUrlProblem(url)]).toEqual([url, expect.stringContaining("write it with its scheme")]);
    for (const url of ["http://localhost:3000", "https://simhost.example.test", "http://[::1]:3000/"])
      expect([url, serverUrlProblem(url)]).toEqual([url, null]);
  });

  test("the CLI answers such a --url as a usage error (exit 2), before any request", () => {
    const run = Bun.spawnSync(["bun", "cli/main.ts", "--url", "127.0.0.1:3000", "health"], { cwd: `${import.meta.dir}/../..` });
    expect(run.exitCode).toBe(2);
    expect(run.stderr.toString()).toContain("is not a server URL");
  });
});

describe("how long the CLI waits for an answer", () => {
  test("30 s, plus what the server holds on purpose: a long-poll's wait, a webhook test's target (up to 120 s)", () => {
    const base = "http://localhost:3000";
    expect(requestTimeoutMs(`${base}/api/me`)).toBe(30_000);
    expect(requestTimeoutMs(`${base}/api/events?wait=60`)).toBe(90_000);
    expect(requestTimeoutMs(`${base}/api/numbers/1/messages/next?timeout=300`)).toBe(330_000);
    expect(requestTimeoutMs(`${base}/api/webhook-integrations/7/test`)).toBe(150_000);
    expect(requestTimeoutMs(`${base}/api/teams/2/webhooks/7/test`)).toBe(150_000);
    expect(requestTimeoutMs(`${base}/api/webhook-integrations/7/logs`)).toBe(30_000);
  });
});
