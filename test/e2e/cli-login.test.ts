import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { generate, generateSecret } from "otplib";
import { createTenant, createUser, TEST_PASSWORD } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import { cliEnv, listen, runCli } from "./cli-helpers";

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

/** One operator's machine: its own config folder, so saved credentials carry over between runs. */
function operator() {
  const env = cliEnv(ctx);
  const run = (args: string[], stdin?: string) => runCli(["--url", url, ...args], { env, stdin });
  const credentialsPath = join(env.XDG_CONFIG_HOME!, "simhost", "credentials.json");
  return { env, run, credentialsPath };
}

async function userWithTwoFactor() {
  const { user, org } = await createTenant(ctx.sql);
  const secret = generateSecret();
  await ctx.sql`update users set totp_secret = ${secret}, totp_enabled = true where id = ${user.id}`;
  return { user, org, secret };
}

describe("simhost login", () => {
  test("saves the token per server URL in a 0600 file; later commands use it", async () => {
    const { user } = await createTenant(ctx.sql);
    const op = operator();
    const r = await op.run(["login", "--email", user.email, "--password", TEST_PASSWORD, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ url, user: { id: user.id, email: user.email }, credentials_path: op.credentialsPath });
    expect(statSync(op.credentialsPath).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(op.credentialsPath, "utf8"));
    expect(Object.keys(saved)).toEqual([url]);
    expect(saved[url].token).toStartWith("st_");

    const me = await op.run(["whoami", "--json"]);
    expect(me.code).toBe(0);
    expect(me.json().user.email).toBe(user.email);
  });

  test("a wrong password: exit 1 with the API's message, nothing saved", async () => {
    const user = await createUser(ctx.sql, {});
    const op = operator();
    const r = await op.run(["login", "--email", user.email, "--password", "wrong password"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr.length).toBeGreaterThan(1);
    expect(() => statSync(op.credentialsPath)).toThrow();
  });

  test("2FA on: --code finishes the login through /api/auth/2fa/verify", async () => {
    const { user, secret } = await userWithTwoFactor();
    const op = operator();
    const r = await op.run(["login", "--email", user.email, "--password", TEST_PASSWORD, "--code", await generate({ secret }), "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().user.email).toBe(user.email);
    expect((await op.run(["whoami", "--json"])).json().user.id).toBe(user.id);
  });

  test("2FA on without --code: asks for the code (read from stdin when not a terminal)", async () => {
    const { user, secret } = await userWithTwoFactor();
    const op = operator();
    const r = await op.run(["login", "--email", user.email, "--json"], `${TEST_PASSWORD}\n${await generate({ secret })}\n`);
    expect(r.code).toBe(0);
    expect(r.json().user.id).toBe(user.id);
  });

  test("2FA on with a wrong code: exit 1", async () => {
    const { user } = await userWithTwoFactor();
    const r = await operator().run(["login", "--email", user.email, "--password", TEST_PASSWORD, "--code", "000000"]);
    expect(r.code).toBe(1);
    // In the CLI's words: the API's names its tmp_token, which a CLI user never sees.
    expect(r.stderr).toContain("The two-factor code was not accepted");
    expect(r.stderr).not.toContain("tmp_token");
  });

  test("logout ends the session on the server and forgets the token", async () => {
    const { user } = await createTenant(ctx.sql);
    const op = operator();
    expect((await op.run(["login", "--email", user.email, "--password", TEST_PASSWORD])).code).toBe(0);
    const token = JSON.parse(readFileSync(op.credentialsPath, "utf8"))[url].token;
    const out = await op.run(["logout", "--json"]);
    expect(out.code).toBe(0);
    expect(out.json()).toEqual({ url, logged_out: true });
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(401);
    expect((await op.run(["whoami"])).code).toBe(1);
  });
});
