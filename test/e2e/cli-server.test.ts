import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, createTenant } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import { cliEnv, listen, runCli } from "./cli-helpers";

// The server commands talk HTTP to a live server, like any client.
let ctx: TestContext;
let url: string;
beforeAll(async () => {
  ctx = await createTestContext();
  url = listen(ctx);
});
afterAll(async () => {
  await ctx?.app.stop();
  await ctx?.close();
});

const cli = (args: string[], env: Record<string, string> = {}) => runCli(["--url", url, ...args], { env: cliEnv(ctx, env) });

describe("simhost health", () => {
  test("ok: exit 0, --json is the health result", async () => {
    const r = await cli(["health", "--json"]);
    expect(r.code).toBe(0);
    const body = r.json();
    expect(body.status).toBe("ok");
    expect(Object.keys(body.checks).sort()).toEqual(["cache", "database", "queue"]);
  });

  test("human output: one row per check", async () => {
    const r = await cli(["health"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${url}: ok`);
    for (const check of ["database", "cache", "queue"]) expect(r.stdout).toMatch(new RegExp(`^${check}\\s+ok`, "m"));
  });

  test("unreachable server: exit 1, one line on stderr", async () => {
    const r = await runCli(["health", "--url", "http://127.0.0.1:9"], { env: cliEnv(ctx) });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("Could not reach http://127.0.0.1:9");
  });

  test("a server that accepts and never answers: exit 1 once SIMHOST_REQUEST_TIMEOUT_SECONDS has passed, not a hang", async () => {
    const hung = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) });
    try {
      const started = Date.now();
      const r = await runCli(["health", "--url", `http://127.0.0.1:${hung.port}`], { env: { ...cliEnv(ctx), SIMHOST_REQUEST_TIMEOUT_SECONDS: "1" } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Could not reach http://127.0.0.1:${hung.port}`);
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      hung.stop(true);
    }
  }, 30_000);

  test("a failing check: exit 1 and the failing check named", async () => {
    // A server whose health answers 503, as when its database is down.
    const down = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        Response.json(
          {
            status: "down",
            timestamp: new Date().toISOString(),
            checks: {
              database: { status: "failing", message: "unreachable", error: "ECONNREFUSED" },
              cache: { status: "ok", message: "in-process" },
              queue: { status: "failing", message: "unknown", error: "database unreachable" },
            },
          },
          { status: 503 },
        ),
    });
    try {
      const r = await runCli(["health", "--url", `http://127.0.0.1:${down.port}`, "--json"], { env: cliEnv(ctx) });
      expect(r.code).toBe(1);
      expect(r.json().status).toBe("down");
      expect(r.stderr.trim()).toBe("Server is down: database ECONNREFUSED; queue database unreachable.");
    } finally {
      down.stop(true);
    }
  });
});

describe("simhost whoami", () => {
  test("with a session token: the user, organization and auth type", async () => {
    const { org, user, token } = await createTenant(ctx.sql);
    const r = await cli(["whoami", "--token", token, "--json"]);
    expect(r.code).toBe(0);
    const body = r.json();
    expect(body).toMatchObject({ auth_type: "session", user: { id: user.id, email: user.email }, organization: { id: org.id, name: org.name } });
    const human = await cli(["whoami", "--token", token]);
    expect(human.stdout).toMatch(new RegExp(`^user\\s+.*<${user.email}>`, "m"));
    expect(human.stdout).toMatch(/^auth\s+session$/m);
  });

  test("with an API key from SIMHOST_TOKEN: auth_type api_key and its permissions", async () => {
    const { org } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["numbers.read", "messages.read"]);
    const r = await cli(["whoami", "--json"], { SIMHOST_TOKEN: key.key });
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ auth_type: "api_key", api_key: { id: key.id, permissions: ["numbers.read", "messages.read"] } });
  });

  test("an unknown token: exit 1 with the API's message", async () => {
    const r = await cli(["whoami", "--token", "st_not-a-token"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("Authentication required: send a valid Bearer token.\n");
  });

  test("not logged in: exit 1 telling to log in", async () => {
    const r = await cli(["whoami"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("simhost login");
  });
});

describe("exit codes", () => {
  test("unknown command and unknown option are usage errors (2); --help is 0", async () => {
    expect((await cli(["frobnicate"])).code).toBe(2);
    expect((await cli(["health", "--bogus"])).code).toBe(2);
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: simhost");
  });
});
