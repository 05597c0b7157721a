import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { encodeCursor } from "../../server/events/cursor";
import { deleteEventsBefore } from "../../server/events/log";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { append, type EventPageBody, testEvent } from "../fixtures-events";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/** Issue 16 item 3: GET /api/events lists the caller's events after a cursor, in log order. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
}, 60_000);
afterAll(() => ctx.close());

const list = async (token: string, query = "", headers: Record<string, string> = {}) => {
  const res = await ctx.request("GET", `/api/events${query ? `?${query}` : ""}`, { token, headers });
  return res as Omit<typeof res, "body"> & { body: EventPageBody };
};
const ns = (body: EventPageBody) => body.data.map((e) => e.data.n);

describe("catching up", () => {
  test("pages through many events in log order with after=meta.next_cursor; the caught-up answer keeps the cursor", async () => {
    const t = await createTenant(ctx.sql);
    const other = await createTenant(ctx.sql);
    // 250 events in 5 transactions, interleaved with another organization's.
    for (let batch = 0; batch < 5; batch++) {
      await append(ctx, [...Array.from({ length: 50 }, (_, i) => testEvent(t.org.id, batch * 50 + i)), testEvent(other.org.id, 1000 + batch)]);
    }
    const seen: unknown[] = [];
    let after: string | undefined;
    const pages: boolean[] = [];
    for (;;) {
      const res = await list(t.token, `per_page=100${after ? `&after=${after}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.meta.per_page).toBe(100);
      seen.push(...ns(res.body));
      pages.push(res.body.meta.has_more);
      if (res.body.data.length > 0) expect(res.body.meta.next_cursor).toBe(res.body.data.at(-1)!.id);
      if (res.body.data.length === 0) {
        expect(res.body.meta.next_cursor).toBe(after!);
        break;
      }
      after = res.body.meta.next_cursor;
    }
    expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => i));
    expect(pages).toEqual([true, true, false, false]);
    // An item is the event: its id is the cursor, data the payload, and it names its organization.
    const first = (await list(t.token, "per_page=1")).body.data[0]!;
    expect(Object.keys(first).sort()).toEqual(["created_at", "data", "id", "organization_id", "type"]);
    expect(first).toMatchObject({ type: "webhook.test", organization_id: t.org.id, data: { n: 0 } });
    expect(first.id).toMatch(/^evt_/);
    // Appended later: the saved cursor picks up exactly what is new.
    await append(ctx, [testEvent(t.org.id, 250)]);
    expect(ns((await list(t.token, `after=${after}`)).body)).toEqual([250]);
  });

  test("without after, the list starts at the oldest event; when it is empty its cursor still works", async () => {
    const t = await createTenant(ctx.sql);
    const empty = await list(t.token);
    expect(empty.body.data).toEqual([]);
    expect(empty.body.meta.has_more).toBe(false);
    await append(ctx, [testEvent(t.org.id, 1), testEvent(t.org.id, 2)]);
    expect(ns((await list(t.token, `after=${empty.body.meta.next_cursor}`)).body)).toEqual([1, 2]);
    expect(ns((await list(t.token)).body)).toEqual([1, 2]);
  });

  test("after=now skips what exists and answers a cursor for what follows", async () => {
    const t = await createTenant(ctx.sql);
    await append(ctx, [testEvent(t.org.id, 1)]);
    const now = await list(t.token, "after=now");
    expect(now.status).toBe(200);
    expect(now.body.data).toEqual([]);
    expect(now.body.meta.next_cursor).toMatch(/^evt_/);
    await append(ctx, [testEvent(t.org.id, 2)]);
    expect(ns((await list(t.token, `after=${now.body.meta.next_cursor}`)).body)).toEqual([2]);
  });
});

describe("filters", () => {
  test("types, hosted_sim and device narrow the list; the cursor of a filtered list skips what the filter left out", async () => {
    const t = await createTenant(ctx.sql);
    await append(ctx, [
      testEvent(t.org.id, 1, { type: "device.online", deviceId: 7001 }),
      testEvent(t.org.id, 2, { type: "message.received", hostedSimId: 8001 }),
      testEvent(t.org.id, 3, { type: "device.offline", deviceId: 7002 }),
      testEvent(t.org.id, 4, { type: "message.sent", hostedSimId: 8002 }),
      testEvent(t.org.id, 5, { type: "number.locked", hostedSimId: 8001 }),
    ]);
    expect(ns((await list(t.token, "types=device.online,device.offline")).body)).toEqual([1, 3]);
    expect(ns((await list(t.token, "types=message.received, message.sent")).body)).toEqual([2, 4]);
    // Repeated, as many clients write a list: all of them (it was the last alone), each one checked.
    expect(ns((await list(t.token, "types=device.online&types=device.offline")).body)).toEqual([1, 3]);
    const bad = await list(t.token, "types=no.such&types=device.offline");
    expect([bad.status, Object.keys((bad.body as unknown as { errors?: object }).errors ?? {})]).toEqual([422, ["types"]]);
    expect(ns((await list(t.token, "hosted_sim=8001")).body)).toEqual([2, 5]);
    expect(ns((await list(t.token, "device=7002")).body)).toEqual([3]);
    expect(ns((await list(t.token, "hosted_sim=8001&types=number.locked")).body)).toEqual([5]);
    expect(ns((await list(t.token, "hosted_sim=8001&device=7001")).body)).toEqual([]);
    const first = await list(t.token, "types=device.online,device.offline&per_page=1");
    expect(ns((await list(t.token, `types=device.online,device.offline&after=${first.body.meta.next_cursor}`)).body)).toEqual([3]);
  });

  test("a user in two organizations reads both; X-Organization-Id narrows to one", async () => {
    const a = await createTenant(ctx.sql);
    const d = await createTenant(ctx.sql);
    const user = await createUser(ctx.sql, { orgId: a.org.id, role: "member" });
    await ctx.sql`insert into memberships (user_id, organization_id, role) values (${user.id}, ${d.org.id}, 'member')`;
    const token = await sessionFor(ctx.sql, user.id);
    await append(ctx, [testEvent(a.org.id, 1), testEvent(d.org.id, 2)]);
    const both = await list(token);
    expect(both.body.data.map((e) => [e.organization_id, e.data.n])).toEqual([
      [a.org.id, 1],
      [d.org.id, 2],
    ]);
    expect(ns((await list(token, "", { "x-organization-id": String(d.org.id) })).body)).toEqual([2]);
  });
});

describe("API keys read the families their permissions cover", () => {
  test("without types a key sees only its families; naming a family it lacks is 403, before any 422", async () => {
    const t = await createTenant(ctx.sql);
    await append(ctx, [
      testEvent(t.org.id, 1, { type: "message.received" }),
      testEvent(t.org.id, 2, { type: "device.online" }),
      testEvent(t.org.id, 3, { type: "webhook.test" }),
    ]);
    const messages = (await createApiKey(ctx.sql, t.org.id, ["messages.read"])).key;
    const numbers = (await createApiKey(ctx.sql, t.org.id, ["numbers.read"])).key;
    const all = (await createApiKey(ctx.sql, t.org.id, ["messages.read", "numbers.read", "webhooks.receive"])).key;
    expect(ns((await list(messages)).body)).toEqual([1]);
    expect(ns((await list(numbers)).body)).toEqual([2]);
    expect(ns((await list(all)).body)).toEqual([1, 2, 3]);
    expect(ns((await list(t.token)).body)).toEqual([1, 2, 3]);
    expect(ns((await list(messages, "types=message.received")).body)).toEqual([1]);
    for (const query of [
      "types=device.online",
      "types=message.received,webhook.test",
      "types=device.online&per_page=0",
      "types=device.online,nonsense&after=x",
    ]) {
      const res = await list(messages, query);
      expect([query, res.status]).toEqual([query, 403]);
      expectErrorShape(res.body, "permission_denied");
    }
    // A key with none of the event permissions is refused whatever it asks.
    for (const permissions of [[], ["numbers.lock"]] as const) {
      const key = (await createApiKey(ctx.sql, t.org.id, [...permissions])).key;
      const res = await list(key, "per_page=0");
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "permission_denied");
    }
    // An unknown type next to a held one is a validation error.
    const res = await list(messages, "types=message.received,message.nonsense");
    expect(res.status).toBe(422);
    expect(Object.keys(expectErrorShape(res.body, "validation_failed").errors)).toEqual(["types"]);
  });
});

describe("bad input answers 422 in the API's shape", () => {
  test("malformed cursors, unknown types and out-of-range numbers", async () => {
    const t = await createTenant(ctx.sql);
    const forged = [
      "evt_",
      "evt_!!!",
      "123",
      "evt_" + Buffer.from("1.2.3").toString("base64url"),
      "evt_" + Buffer.from("-5.1").toString("base64url"),
      "evt_" + Buffer.from("1.99999999999999999").toString("base64url"),
      "evt_" + "A".repeat(200),
      "later",
      // Not as this server writes them: a leading zero, padding, a character base64url decoding skips.
      `evt_${Buffer.from("0123.4").toString("base64url")}`,
      `${encodeCursor({ txid: "123", id: 4 })}=`,
      `${encodeCursor({ txid: "123", id: 4 })}!`,
    ];
    const cases = [
      ...forged.map((c) => [`after=${encodeURIComponent(c)}`, "after"]),
      ["types=bogus", "types"],
      ["types=", "types"],
      ["types=message.received,", "types"],
      ["per_page=0", "per_page"],
      ["per_page=501", "per_page"],
      ["wait=0", "wait"],
      ["wait=61", "wait"],
      ["hosted_sim=abc", "hosted_sim"],
      ["device=-1", "device"],
    ] as const;
    for (const [query, field] of cases) {
      const res = await list(t.token, query);
      expect([query, res.status]).toEqual([query, 422]);
      expect([query, Object.keys(expectErrorShape(res.body, "validation_failed").errors)]).toEqual([query, [field]]);
    }
  });

  test("another organization's cursor only positions the read: it never reveals that organization's events", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    await append(ctx, [testEvent(b.org.id, 1), testEvent(a.org.id, 2), testEvent(b.org.id, 3), testEvent(a.org.id, 4)]);
    const ofB = (await list(b.token)).body.data;
    expect(ns((await list(a.token, `after=${ofB[0]!.id}`)).body)).toEqual([2, 4]);
    expect(ns((await list(a.token, `after=${ofB[1]!.id}`)).body)).toEqual([4]);
    // A well-formed cursor nobody was given, far ahead: an empty list at that position.
    const ahead = encodeCursor({ txid: "9999999999999999999", id: 1 });
    const res = await list(a.token, `after=${ahead}`);
    expect(res.body).toEqual({ data: [], meta: { next_cursor: ahead, per_page: 100, has_more: false } });
  });
});

describe("a cursor that retention has overtaken", () => {
  test("answers 410 cursor_expired instead of skipping the removed events; a cursor at or past the newest removed, the log's start, now and no cursor still read", async () => {
    const t = await createTenant(ctx.sql);
    const empty = await list(t.token);
    for (let n = 0; n < 5; n++) await append(ctx, [testEvent(t.org.id, n)]);
    const cursors = (await list(t.token)).body.data.map((e) => e.id);
    expect(cursors).toHaveLength(5);
    // Events 0..2 are past retention, and the hourly clean-up removes them: event 2 in one run, 0
    // and 1 in a later one (which leaves the horizon at event 2).
    const retire = async (which: number[]) => {
      await ctx.sql`update events set created_at = now() - interval '40 days' where organization_id = ${t.org.id} and (payload->>'n')::int = any(${which})`;
      return deleteEventsBefore(ctx.sql, new Date(Date.now() - 30 * 86_400_000));
    };
    expect(await retire([2])).toBe(1);
    expect(await retire([0, 1])).toBe(2);

    for (const query of [`after=${cursors[0]}`, `after=${cursors[1]}`, `after=${cursors[1]}&wait=1`]) {
      const res = await list(t.token, query);
      expect([query, res.status]).toEqual([query, 410]);
      expect(expectErrorShape(res.body, "cursor_expired").message).toContain("without `after`");
    }
    expect(ns((await list(t.token, `after=${cursors[2]}`)).body)).toEqual([3, 4]);
    expect(ns((await list(t.token, `after=${cursors[3]}`)).body)).toEqual([4]);
    expect(ns((await list(t.token)).body)).toEqual([3, 4]);
    expect(ns((await list(t.token, `after=${empty.body.meta.next_cursor}`)).body)).toEqual([3, 4]);
    expect((await list(t.token, "after=now")).status).toBe(200);
  });
});
