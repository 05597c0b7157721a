import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestContext, type TestContext } from "../helpers";
import { cliEnv, runCli } from "./cli-helpers";

// `simhost admin oauth-client ...` on the test context's database, as an operator runs it.
let ctx: TestContext;
let env: Record<string, string>;
beforeAll(async () => {
  ctx = await createTestContext();
  env = cliEnv(ctx);
}, 60_000);
afterAll(() => ctx?.close());

const admin = (...args: string[]) => runCli(["admin", "oauth-client", ...args], { env });

describe("simhost admin oauth-client", () => {
  test("create prints { client_id, ... }; list shows it; delete removes it", async () => {
    const created = await admin(
      "create",
      "--name",
      "Chrome extension",
      "--redirect-uri",
      "https://abc.chromiumapp.org/cb",
      "http://127.0.0.1:8000/cb",
      "chrome-extension://abcdefghijklmnop/cb.html",
      "com.example.app:/oauth",
      "--json",
    );
    expect(created.code).toBe(0);
    const client = created.json();
    expect(client.client_id).toMatch(/^oc_[\w-]{24}$/);
    expect(client.name).toBe("Chrome extension");
    expect(client.redirect_uris).toEqual([
      "https://abc.chromiumapp.org/cb",
      "http://127.0.0.1:8000/cb",
      "chrome-extension://abcdefghijklmnop/cb.html",
      "com.example.app:/oauth",
    ]);

    const listed = await admin("list", "--json");
    expect(listed.json().data.map((c: { client_id: string }) => c.client_id)).toContain(client.client_id);
    expect((await admin("list")).stdout).toContain(client.client_id);

    const deleted = await admin("delete", client.client_id, "--json");
    expect(deleted.code).toBe(0);
    expect(deleted.json()).toEqual({ client_id: client.client_id, deleted: true });
    const [row] = await ctx.sql`select count(*)::int as n from oauth_clients where client_id = ${client.client_id}`;
    expect(row!.n).toBe(0);
  }, 60_000);

  test("a redirect URI with a fragment or plain http to another host is a usage error (exit 2)", async () => {
    for (const uri of [
      "https://example.com/cb#x",
      "http://example.com/cb",
      "javascript:alert(1)",
      "not a uri",
      // Network schemes other than https carry the code in clear to a remote host.
      "ws://example.com/cb",
      "ftp://example.com/cb",
      "view-source:https://example.com/",
    ]) {
      const r = await admin("create", "--name", "Bad", "--redirect-uri", uri, "--json");
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
    }
    expect((await admin("create", "--redirect-uri", "https://example.com/cb")).code).toBe(2);
  }, 60_000);

  test("deleting an unknown client fails with one line (exit 1)", async () => {
    const r = await admin("delete", "oc_nobody");
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("No OAuth client oc_nobody.");
  }, 30_000);
});
