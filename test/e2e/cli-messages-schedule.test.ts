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

    writeFileSync(csv, "to,city\n+15551230031,Paris\n");
    const unknown = await server.run(token, ["messages", "send", "--number", sim.number, "--to-file", csv, "--text", "Hi {{name}}"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("{{name}}");
    writeFileSync(csv, "phone\n+15551230031\n");
    expect((await server.run(token, ["messages", "send", "--number", sim.number, "--to-file", csv, "--text", "x"])).code).toBe(2);
    expect((await server.run(token, ["messages", "send", "--number", sim.number, "--text", "x"])).code).toBe(2);
    expect((await server.run(token, ["messages", "list", "--number", sim.number, "--batch", batch_id])).code).toBe(2);
  });
});
