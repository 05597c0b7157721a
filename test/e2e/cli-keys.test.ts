import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, createTenant } from "../fixtures";
import { startCliServer } from "./cli-helpers";

let server: Awaited<ReturnType<typeof startCliServer>>;
beforeAll(async () => {
  server = await startCliServer();
});
afterAll(() => server?.close());

describe("simhost keys", () => {
  test("create shows the key once; list shows it without; revoke kills it", async () => {
    const { token } = await createTenant(server.ctx.sql);
    const created = await server.run(token, ["keys", "create", "--name", "ci", "--permission", "numbers.read", "--permission", "messages.read", "--json"]);
    expect(created.code).toBe(0);
    const { api_key, plain_text_key } = created.json();
    expect(plain_text_key).toStartWith("sk_");
    expect(api_key).toMatchObject({ name: "ci", permissions: ["numbers.read", "messages.read"], key_prefix: plain_text_key.slice(0, 12) });

    const human = await server.run(token, ["keys", "create", "--name", "human", "--permission", "numbers.lock"]);
    expect(human.stdout).toContain("shown only now");
    expect(human.stdout).toMatch(/^sk_\w+$/m);

    const list = await server.run(token, ["keys", "list", "--json"]);
    expect(list.code).toBe(0);
    const names = list.json().data.map((k: any) => k.name);
    expect(names).toContain("ci");
    expect(list.stdout).not.toContain(plain_text_key);
    const table = await server.run(token, ["keys", "list"]);
    expect(table.stdout).toMatch(new RegExp(`^${api_key.id}\\s+ci\\s+${api_key.key_prefix}\\s+numbers.read,messages.read\\s+never`, "m"));

    expect((await server.run(plain_text_key, ["whoami"])).code).toBe(0);
    const revoked = await server.run(token, ["keys", "revoke", String(api_key.id), "--json"]);
    expect(revoked.code).toBe(0);
    expect(revoked.json()).toEqual({ id: api_key.id, revoked: true });
    const dead = await server.run(plain_text_key, ["whoami"]);
    expect(dead.code).toBe(1);
  });

  test("errors: an API key may not manage keys (exit 1, API message); bad permission is a usage error", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const key = await createApiKey(server.ctx.sql, org.id, ["numbers.read"]);
    const refused = await server.run(key.key, ["keys", "list"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect((await server.run(token, ["keys", "create", "--name", "x", "--permission", "everything"])).code).toBe(2);
    expect((await server.run(token, ["keys", "create", "--name", "x"])).code).toBe(2);
    const missing = await server.run(token, ["keys", "revoke", "987654321"]);
    expect(missing.code).toBe(1);
  });
});
