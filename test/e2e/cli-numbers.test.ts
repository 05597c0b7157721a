import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storeInboundMessage } from "../../server/messages/inbound";
import { createTenant } from "../fixtures";
import { attachNumber, startCliServer, uniqueNumber } from "./cli-helpers";

let server: Awaited<ReturnType<typeof startCliServer>>;
beforeAll(async () => {
  server = await startCliServer();
});
afterAll(() => server?.close());

describe("simhost numbers", () => {
  test("list, lock, unlock, alias, by id or by number", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id, { alias: "front desk" });

    const list = await server.run(token, ["numbers", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(list.json().data).toEqual([
      expect.objectContaining({ id: sim.id, number: sim.number, organizations: [expect.objectContaining({ alias: "front desk" })] }),
    ]);
    const table = await server.run(token, ["numbers", "list"]);
    expect(table.stdout).toMatch(new RegExp(`^${sim.id}\\s+\\${sim.number}\\s+shared\\s+active\\s+front desk`, "m"));

    const locked = await server.run(token, ["numbers", "lock", sim.number, "--duration", "120", "--json"]);
    expect(locked.code).toBe(0);
    const until = new Date(locked.json().data.lock.locked_until).getTime();
    expect(until).toBeGreaterThan(Date.now() + 100_000);
    expect(until).toBeLessThan(Date.now() + 130_000);

    const unlocked = await server.run(token, ["numbers", "unlock", String(sim.id), "--json"]);
    expect(unlocked.code).toBe(0);
    expect(unlocked.json().data.lock).toBeNull();

    const again = await server.run(token, ["numbers", "unlock", String(sim.id)]);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe(`${sim.number} was not locked by your organization.`);

    const releasing = await server.run(token, ["numbers", "lock", String(sim.id), "--release-on-message", "--sender", "Google", "--json"]);
    expect(releasing.code).toBe(0);
    const lock = releasing.json().data.lock;
    expect(lock).toMatchObject({ release_on_message: true, sender: "Google" });
    const shown = await server.run(token, ["numbers", "show", String(sim.id)]);
    expect(shown.stdout).toContain(`until ${lock.locked_until} or the first SMS from Google`);
    const released = await server.run(token, ["numbers", "unlock", String(sim.id)]);
    expect(released.code).toBe(0);
    expect(released.stdout.trim()).toBe(`Unlocked ${sim.number}.`);

    const aliased = await server.run(token, ["numbers", "alias", String(sim.id), "Support line", "--json"]);
    expect(aliased.code).toBe(0);
    expect(aliased.json().data.organizations[0].alias).toBe("Support line");
    const cleared = await server.run(token, ["numbers", "alias", sim.number, "--clear"]);
    expect(cleared.code).toBe(0);
    expect(cleared.stdout).toContain("has no alias");
  });

  test("order takes a free pool number; show displays it", async () => {
    const { token } = await createTenant(server.ctx.sql);
    const pooled = uniqueNumber();
    await server.ctx.sql`insert into hosted_sims (number, provider, type, shared_max_orgs) values (${pooled}, 'test', 'shared', 5)`;
    const ordered = await server.run(token, ["numbers", "order", "--alias", "Ordered", "--json"]);
    expect(ordered.code).toBe(0);
    const sim = ordered.json().data;
    expect(sim.organizations[0].alias).toBe("Ordered");
    const shown = await server.run(token, ["numbers", "show", sim.number]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^alias\s+Ordered$/m);
    expect(shown.stdout).toContain(sim.number);
  });

  test("errors: another organization's number is not found (exit 1); bad arguments exit 2", async () => {
    const a = await createTenant(server.ctx.sql);
    const b = await createTenant(server.ctx.sql);
    const theirs = await attachNumber(server.ctx, b.org.id);
    const r = await server.run(a.token, ["numbers", "lock", String(theirs.id)]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    const byNumber = await server.run(a.token, ["numbers", "unlock", theirs.number]);
    expect(byNumber.code).toBe(1);
    expect(byNumber.stderr.trim()).toBe(`No number ${theirs.number} in your organization.`);
    expect((await server.run(a.token, ["numbers", "lock", "not-a-number"])).code).toBe(2);
    expect((await server.run(a.token, ["numbers", "lock", String(theirs.id), "--sender", "Google"])).code).toBe(2);
    expect((await server.run(a.token, ["numbers", "alias", String(theirs.id)])).code).toBe(2);
  });
});

describe("simhost messages", () => {
  test("list: newest first, --since filters by age or date-time", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const now = Date.now();
    for (const [text, agoMinutes] of [
      ["old one", 180],
      ["recent one", 5],
      ["newest one", 1],
    ] as const) {
      await server.ctx.sql.begin((tx) =>
        storeInboundMessage(tx, { hostedSimId: sim.id, from: "+15557654321", text, source: "provider", receivedAt: new Date(now - agoMinutes * 60_000) }),
      );
    }
    const all = await server.run(token, ["messages", "list", "--number", sim.number, "--json"]);
    expect(all.code).toBe(0);
    expect(all.json().data.map((m: any) => m.text)).toEqual(["newest one", "recent one", "old one"]);

    const recent = await server.run(token, ["messages", "list", "--number", String(sim.id), "--since", "1h", "--json"]);
    expect(recent.json().data.map((m: any) => m.text)).toEqual(["newest one", "recent one"]);
    const since = await server.run(token, ["messages", "list", "--number", sim.number, "--since", new Date(now - 2 * 60_000).toISOString(), "--json"]);
    expect(since.json().data.map((m: any) => m.text)).toEqual(["newest one"]);

    const table = await server.run(token, ["messages", "list", "--number", sim.number]);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+AT\s+DIR\s+FROM\s+TO\s+STATUS\s+TEXT$/);
    expect(table.stdout).toMatch(/in\s+\+15557654321\s+\+\d+\s+received\s+newest one/);

    // Anyone's SMS text: its escape sequences are shown, not run, on the reader's terminal; --json keeps the text as sent.
    const hostile = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mFAKE: your code is 000000\x1b[0m\u009b2J";
    await server.ctx.sql.begin((tx) =>
      storeInboundMessage(tx, { hostedSimId: sim.id, from: "+15557654321", text: hostile, source: "provider", receivedAt: new Date() }),
    );
    for (const args of [
      ["messages", "list", "--number", sim.number],
      ["messages", "show", String((await server.run(token, ["messages", "list", "--number", sim.number, "--json"])).json().data[0].id)],
      ["events", "list"],
    ]) {
      const shown = await server.run(token, args);
      const controls = [...shown.stdout].filter((ch) => {
        const c = ch.charCodeAt(0);
        return (c < 0x20 && ch !== "\n") || (c >= 0x7f && c <= 0x9f);
      });
      expect([args[1], shown.code, controls]).toEqual([args[1], 0, []]);
      expect(shown.stdout).toContain("\\x1b]0;PWNED\\x07");
    }
    const raw = await server.run(token, ["messages", "list", "--number", sim.number, "--json"]);
    expect(raw.json().data[0].text).toBe(hostile);

    expect((await server.run(token, ["messages", "list", "--number", sim.number, "--since", "yesterday"])).code).toBe(2);
    expect((await server.run(token, ["messages", "list"])).code).toBe(2);
  });

  test("send: queued (202) and then in the history as outbound", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const sent = await server.run(token, ["messages", "send", "--number", sim.number, "--to", "+15551230000", "--text", "hello from the CLI", "--json"]);
    expect(sent.code).toBe(0);
    expect(sent.json().data).toMatchObject({ direction: "outbound", to: "+15551230000", text: "hello from the CLI", status: "queued" });
    const out = await server.run(token, ["messages", "list", "--number", sim.number, "--direction", "outbound", "--json"]);
    expect(out.json().data.map((m: any) => m.id)).toContain(sent.json().data.id);
    expect((await server.run(token, ["messages", "send", "--number", sim.number, "--to", "12345", "--text", "x"])).code).toBe(2);
  });
});
