import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTenant } from "../fixtures";
import { attachNumber, startCliServer } from "./cli-helpers";

/** `simhost messages send` with --send-at, --expires-at, several --to, --to-file; `messages cancel`; `messages list --batch`. */
let server: Awaited<ReturnType<typeof startCliServer>>;
beforeAll(async () => {
  server = await startCliServer();
});
afterAll(() => server?.close());

describe("simhost messages send (scheduled, bulk) and cancel", () => {
  test("--send-at schedules, --expires-at bounds it, cancel cancels; a second cancel answers the same", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const sent = await server.run(token, [
      "messages",
      "send",
      "--number",
      sim.number,
      "--to",
      "+15551230001",
      "--text",
      "later",
      "--send-at",
      "10m",
      "--expires-at",
      "1h",
      "--json",
    ]);
    expect(sent.code).toBe(0);
    const m = sent.json().data;
    expect(m.status).toBe("scheduled");
    expect(Date.parse(m.send_at)).toBeGreaterThan(Date.now() + 9 * 60_000);
    expect(Date.parse(m.expires_at)).toBeGreaterThan(Date.now() + 59 * 60_000);
    const text = await server.run(token, ["messages", "send", "--number", sim.number, "--to", "+15551230002", "--text", "later", "--send-at", "2h"]);
    expect(text.stdout).toMatch(/^Message \d+ to \+15551230002 is scheduled \(sends at /);
    const cancelled = await server.run(token, ["messages", "cancel", String(m.id)]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain(`Message ${m.id} to +15551230001 is cancelled.`);
    expect((await server.run(token, ["messages", "cancel", String(m.id), "--json"])).json().data.status).toBe("cancelled");
    const tooFar = await server.run(token, ["messages", "send", "--number", sim.number, "--to", "+15551230003", "--text", "x", "--send-at", "40d"]);
    expect(tooFar.code).toBe(1);
    expect(tooFar.stderr).toContain("30 days");
    expect((await server.run(token, ["messages", "send", "--number", sim.number, "--to", "+15551230003", "--text", "x", "--send-at", "soon"])).code).toBe(2);
    // A delay no date can hold is a usage error, not an "Invalid Date" crash.
    const huge = await server.run(token, ["messages", "send", "--number", sim.number, "--to", "+15551230003", "--text", "x", "--send-at", "99999999999w"]);
    expect([huge.code, huge.stderr]).toEqual([2, expect.stringContaining("Not a date-time")]);
    // A past --at sends now, so --expires-in counts from now (it counted from the past time: 422).
    const past = await server.run(token, [
      "messages",
      "send",
      "--number",
      sim.number,
      "--to",
      "+15551230004",
      "--text",
      "now",
      "--at",
      "2020-01-01T00:00:00Z",
      "--expires-in",
      "1h",
      "--json",
    ]);
    expect(past.code).toBe(0);
    expect(Date.parse(past.json().data.expires_at)).toBeGreaterThan(Date.now() + 59 * 60_000);
  });

  test("several --to or a CSV make one batch with per-recipient variables; list --batch shows it", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const two = await server.run(token, ["messages", "send", "--number", sim.number, "--to", "+15551230011", "--to", "+15551230012", "--text", "hi all"]);
    expect(two.code).toBe(0);
    expect(two.stdout).toMatch(/^Batch [0-9a-f-]{36}: 2 messages \(2 queued\)\./);

    const dir = mkdtempSync(join(tmpdir(), "simhost-cli-csv-"));
    const csv = join(dir, "to.csv");
    writeFileSync(csv, 'to,name\n+15551230021,Ada\n+15551230022,"Bob, Jr."\n');
    const batch = await server.run(token, ["messages", "send", "--number", sim.number, "--to-file", csv, "--text", "Hi {{name}}", "--json"]);
    expect(batch.code).toBe(0);
    const { batch_id, messages } = batch.json().data;
    expect(messages.map((x: any) => x.text)).toEqual(["Hi Ada", "Hi Bob, Jr."]);
    const listed = await server.run(token, ["messages", "list", "--batch", batch_id, "--json"]);
    expect(listed.json().data.map((x: any) => x.to)).toEqual(["+15551230021", "+15551230022"]);
    const one = await server.run(token, ["messages", "show", String(listed.json().data[0].id)]);
    expect(one.stdout).toContain(`batch     ${batch_id}`);

    writeFileSync(csv, "to,city\n+15551230031,Paris\n");
    const unknown = await server.run(token, ["messages", "send", "--number", sim.number, "--to-file", csv, "--text", "Hi {{name}}"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("{{name}}");
    // A row short of the first line's columns: refused, naming its line (it sent "Hi " for "Hi {{name}}").
    writeFileSync(csv, "to,name\n+15551230041,Ada\n+15551230042\n");
    const short = await server.run(token, ["messages", "send", "--number", sim.number, "--to-file", csv, "--text", "Hi {{name}}"]);
    expect([short.code, short.stderr.trim()]).toEqual([2, `error: ${csv}, line 3: 1 value for the 2 columns of the first line.`]);
    writeFileSync(csv, "phone\n+15551230031\n");
    expect((await server.run(token, ["messages", "send", "--number", sim.number, "--to-file", csv, "--text", "x"])).code).toBe(2);
    expect((await server.run(token, ["messages", "send", "--number", sim.number, "--text", "x"])).code).toBe(2);
    expect((await server.run(token, ["messages", "list", "--number", sim.number, "--batch", batch_id])).code).toBe(2);
  });
});

describe("simhost messages send --at, --expires-in, --idempotency-key; messages show", () => {
  test("--at schedules and --expires-in counts from it; the same --idempotency-key sends once; show prints status and attempts", async () => {
    const { org, token } = await createTenant(server.ctx.sql);
    const sim = await attachNumber(server.ctx, org.id);
    const base = ["messages", "send", "--number", sim.number, "--to", "+15551230041"];
    const args = [...base, "--text", "once", "--at", "2h", "--expires-in", "30m"];
    const first = await server.run(token, [...args, "--idempotency-key", "cli-key-1", "--json"]);
    expect(first.code).toBe(0);
    const m = first.json().data;
    expect(m.status).toBe("scheduled");
    expect(Date.parse(m.expires_at) - Date.parse(m.send_at)).toBe(30 * 60_000);
    expect(Date.parse(m.send_at)).toBeGreaterThan(Date.now() + 119 * 60_000);

    // The same key and body: the original answer, no second message. The same key with another body: 422.
    const again = await server.run(token, [
      ...base,
      "--text",
      "once",
      "--at",
      m.send_at,
      "--expires-at",
      m.expires_at,
      "--idempotency-key",
      "cli-key-1",
      "--json",
    ]);
    expect(again.code).toBe(0);
    expect(again.json().data.id).toBe(m.id);
    const [count] = await server.ctx.sql<{ n: number }[]>`select count(*)::int as n from messages where organization_id = ${org.id}`;
    expect(count!.n).toBe(1);
    const reused = await server.run(token, [...base, "--text", "another", "--idempotency-key", "cli-key-1"]);
    expect(reused.code).toBe(1);
    expect(reused.stderr).toContain("Idempotency-Key");

    const shown = await server.run(token, ["messages", "show", String(m.id)]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`Message ${m.id} (outbound) ${sim.number} → +15551230041`);
    expect(shown.stdout).toMatch(/status\s+scheduled since /);
    expect(shown.stdout).toMatch(/attempts\s+0/);
    expect(shown.stdout).toContain(`expires   ${m.expires_at}`);
    expect((await server.run(token, ["messages", "show", String(m.id), "--json"])).json().data).toMatchObject({ id: m.id, attempts: 0, error: null });

    // One of each pair; a duration that is not one: usage errors (exit 2) before anything is sent.
    for (const bad of [
      ["--at", "1h", "--send-at", "2h"],
      ["--expires-in", "1h", "--expires-at", "2h"],
      ["--expires-in", "soon"],
    ])
      expect((await server.run(token, [...base, "--text", "x", ...bad])).code).toBe(2);
    expect((await server.run(token, ["messages", "show", "999999999"])).code).toBe(1);
  });
});
