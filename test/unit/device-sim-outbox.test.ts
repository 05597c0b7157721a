import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openOutbox, type ReceivedSms } from "../../device-sim/outbox";

const sms = (n: number): ReceivedSms => ({
  message_id: `00000000-0000-4000-8000-00000000000${n}`,
  from: "+15551230000",
  body: `hello ${n}`,
  received_at: new Date(1_700_000_000_000 + n * 1000).toISOString(),
  sim_slot: 1,
});

describe("device outbox", () => {
  test("what was not acknowledged survives a restart, in order; acknowledged SMS do not come back", () => {
    const path = join(mkdtempSync(join(tmpdir(), "outbox-")), "state", "outbox.jsonl");
    const a = openOutbox(path);
    for (const n of [1, 2, 3]) a.add("dev-a", sms(n));
    a.add("dev-b", sms(4));
    a.ack(sms(2).message_id);
    const b = openOutbox(path);
    expect(b.pending().map((e) => e.sms.body)).toEqual(["hello 1", "hello 3", "hello 4"]);
    expect(b.pending("dev-a").map((e) => e.sms.message_id)).toEqual([sms(1).message_id, sms(3).message_id]);
    // Compaction on open keeps only the pending lines.
    expect(readFileSync(path, "utf8").trim().split("\n")).toHaveLength(3);
  });

  test("adding the same SMS twice keeps one; acking twice is harmless", () => {
    const o = openOutbox();
    o.add("d", sms(1));
    o.add("d", sms(1));
    expect(o.size()).toBe(1);
    o.ack(sms(1).message_id);
    o.ack(sms(1).message_id);
    expect(o.size()).toBe(0);
  });

  test("a torn last line from a crash mid-write is skipped", () => {
    const path = join(mkdtempSync(join(tmpdir(), "outbox-")), "outbox.jsonl");
    const a = openOutbox(path);
    a.add("d", sms(1));
    appendFileSync(path, '{"t":"sms","device":"d","sms":{"message_');
    expect(
      openOutbox(path)
        .pending()
        .map((e) => e.sms.body),
    ).toEqual(["hello 1"]);
  });
});
