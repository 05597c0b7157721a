import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeCursor, encodeCursor, ORIGIN } from "../../server/events/cursor";
import { appendEvents, highWaterPosition, readEvents, readEventsCreatedBetween, type StoredEvent } from "../../server/events/log";
import { createTenant } from "../fixtures";
import { eventually } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

const event = (organizationId: number, n: number) => ({ organizationId, type: "webhook.test" as const, payload: { n } });

describe("the event log", () => {
  test("cursors round-trip; anything else is not a cursor", () => {
    const p = { txid: "123456789012", id: 42 };
    expect(decodeCursor(encodeCursor(p))).toEqual(p);
    for (const bad of ["", "evt_", "evt_!!", "42", `evt_${Buffer.from("1.2.3").toString("base64url")}`, `evt_${Buffer.from("-1.2").toString("base64url")}`]) {
      expect(decodeCursor(bad)).toBeNull();
    }
  });

  test("an appended event reaches the tail after its commit, a rolled-back one never", async () => {
    const { org } = await createTenant(ctx.sql);
    const seen: StoredEvent[] = [];
    const off = ctx.services.events.onEvents((batch) => seen.push(...batch.filter((e) => e.organizationId === org.id)));
    await ctx.sql
      .begin(async (tx) => {
        await appendEvents(tx, [event(org.id, 0)]);
        throw new Error("roll back");
      })
      .catch(() => {});
    await ctx.sql.begin((tx) => appendEvents(tx, [event(org.id, 1), event(org.id, 2)]));
    ctx.services.events.notify();
    await eventually(() => seen.length >= 2, 5000, "the tail");
    expect(seen.map((e) => e.payload.n)).toEqual([1, 2]);
    off();
  });

  test("an event whose transaction began first but commits last is not skipped by a reader that read in between", async () => {
    const { org } = await createTenant(ctx.sql);
    const start = await highWaterPosition(ctx.sql);
    let releaseSlow!: () => void;
    const slowMayCommit = new Promise<void>((r) => {
      releaseSlow = r;
    });
    let slowAppended!: () => void;
    const appended = new Promise<void>((r) => {
      slowAppended = r;
    });
    const slow = ctx.sql.begin(async (tx) => {
      await appendEvents(tx, [event(org.id, 1)]);
      slowAppended();
      await slowMayCommit;
    });
    await appended;
    // Embedded PostgreSQL runs one transaction at a time: the interleaving needs a server.
    if (ctx.services.db.kind === "postgres") {
      await ctx.sql.begin((tx) => appendEvents(tx, [event(org.id, 2)]));
      // The later transaction has committed, but the older one still runs: neither is readable yet.
      expect(await readEvents(ctx.sql, start, { organizations: [org.id] }, 10)).toEqual([]);
    }
    releaseSlow();
    await slow;
    const all = await readEvents(ctx.sql, start, { organizations: [org.id] }, 10);
    expect(all.map((e) => e.payload.n).sort()).toEqual(ctx.services.db.kind === "postgres" ? [1, 2] : [1]);
  });

  test("a batch is appended in its order, every field and payload as given", async () => {
    const { org } = await createTenant(ctx.sql);
    const start = await highWaterPosition(ctx.sql);
    const payload = (n: number) => ({ n, text: `ünïcødé 🙂 "quoted" \\ back\nline ${n}`, nested: { list: [n, null, true], empty: {} }, none: null });
    const batch = Array.from({ length: 1500 }, (_, n) => ({
      ...event(org.id, n),
      payload: payload(n),
      hostedSimId: n % 3 === 0 ? null : n,
      teamId: n % 2 ? n : null,
    }));
    await ctx.sql.begin((tx) => appendEvents(tx, batch));
    const read = await readEvents(ctx.sql, start, { organizations: [org.id] }, 2000);
    expect(read.map((e) => e.payload)).toEqual(batch.map((e) => e.payload));
    expect(read.map((e) => [e.hostedSimId, e.teamId, e.deviceId])).toEqual(batch.map((e) => [e.hostedSimId, e.teamId, null]));
    expect(read.map((e) => e.position.id)).toEqual([...read.map((e) => e.position.id)].sort((a, b) => a - b));
  });

  test("a dedupe key appends once", async () => {
    const { org } = await createTenant(ctx.sql);
    const start = await highWaterPosition(ctx.sql);
    for (let i = 0; i < 2; i++) await appendEvents(ctx.sql, [{ ...event(org.id, i), dedupeKey: "message:1" }]);
    expect((await readEvents(ctx.sql, start, { organizations: [org.id] }, 10)).length).toBe(1);
  });

  test("transaction ids are ordered as numbers, not as text: a cursor crossing 9 -> 10 reads every event once, in order", async () => {
    const { org } = await createTenant(ctx.sql);
    // Rows as two transactions numbered 9 and 10 would have appended them (txids are
    // normally assigned by PostgreSQL; these two are older than any real one, so readable).
    await ctx.sql`
      insert into events (organization_id, type, payload, txid)
      values (${org.id}, 'webhook.test', '{"n": 1}', '9'::xid8), (${org.id}, 'webhook.test', '{"n": 2}', '10'::xid8)`;
    const all = await readEvents(ctx.sql, ORIGIN, { organizations: [org.id] }, 10);
    expect(all.map((e) => [e.position.txid, e.payload.n])).toEqual([
      ["9", 1],
      ["10", 2],
    ]);
    // One at a time, as a consumer reading in batches would: nothing skipped.
    const first = await readEvents(ctx.sql, ORIGIN, { organizations: [org.id] }, 1);
    const second = await readEvents(ctx.sql, first[0]!.position, { organizations: [org.id] }, 1);
    expect([...first, ...second].map((e) => e.payload.n)).toEqual([1, 2]);
    const window = { since: new Date(Date.now() - 60_000), until: new Date(Date.now() + 60_000), types: null };
    expect((await readEventsCreatedBetween(ctx.sql, org.id, window, 10)).map((e) => e.payload.n)).toEqual([1, 2]);
  });
});
