import { beforeAll, describe, expect, test } from "bun:test";
import { createApiKey, createTenant } from "../fixtures";
import { createSharedNumber } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

/** `count` inbound messages "<label> 1" .. "<label> N" on a number, visible to `orgId`; plus one outbound. */
async function fill(orgId: number, sim: { id: number; number: string }, label: string, count: number) {
  await ctx.sql`
    with m as (
      insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source, received_at, code)
      select ${sim.id}, ${sim.number}, 'inbound', '+15550000001', ${sim.number}, ${label} || ' ' || i || case when i % 10 = 0 then ' code G-' || (100000 + i) else '' end,
             'received', 'provider', now(), case when i % 10 = 0 then 'G-' || (100000 + i) end
      from generate_series(1, ${count}) i order by i
      returning id, code)
    insert into message_visibility (organization_id, hosted_sim_id, message_id, has_code) select ${orgId}, ${sim.id}, id, code is not null from m`;
  await ctx.sql`
    with m as (
      insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source, organization_id)
      values (${sim.id}, ${sim.number}, 'outbound', ${sim.number}, '+15550000001', 'sent out', 'sent', 'api', ${orgId}) returning id)
    insert into message_visibility (organization_id, hosted_sim_id, message_id, outbound) select ${orgId}, ${sim.id}, id, true from m`;
}

const inbox = (token: string, query = "", headers: Record<string, string> = {}) => ctx.request("GET", `/api/inbox?${query}`, { token, headers });

describe("GET /api/inbox", () => {
  test("every attached number's inbound messages, newest first, in keyset pages that new arrivals do not shift", async () => {
    const t = await createTenant(ctx.sql);
    const a = await createSharedNumber(ctx.sql, [t.org.id]);
    const b = await createSharedNumber(ctx.sql, [t.org.id]);
    await fill(t.org.id, a, "a", 30);
    await fill(t.org.id, b, "b", 30);

    const first = await inbox(t.token, "per_page=25");
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(25);
    expect(first.body.data[0].text).toBe("b 30 code G-100030");
    expect(first.body.data.every((m: { direction: string }) => m.direction === "inbound")).toBe(true);
    const ids = first.body.data.map((m: { id: number }) => m.id);
    expect(ids).toEqual([...ids].sort((x: number, y: number) => y - x));
    expect(first.body.meta).toEqual({ per_page: 25, next_before: ids[24] });

    await fill(t.org.id, a, "late", 5);
    const seen = new Set<number>(ids);
    let before: number | null = first.body.meta.next_before;
    let pages = 1;
    while (before !== null) {
      const page = await inbox(t.token, `per_page=25&before=${before}`);
      for (const m of page.body.data) {
        expect(seen.has(m.id)).toBe(false);
        seen.add(m.id);
      }
      before = page.body.meta.next_before;
      pages += 1;
    }
    expect(seen.size).toBe(60);
    expect(pages).toBe(3);

    const coded = await inbox(t.token, "has_code=true&q=b%20");
    expect(coded.body.data.map((m: { text: string }) => m.text)).toEqual(["b 30 code G-100030", "b 20 code G-100020", "b 10 code G-100010"]);
    expect(coded.body.data[0].code).toBe("G-100030");
  });

  test("isolation: another organization's numbers never show; a number no longer attached drops out", async () => {
    const t = await createTenant(ctx.sql);
    const other = await createTenant(ctx.sql);
    const mine = await createSharedNumber(ctx.sql, [t.org.id]);
    const theirs = await createSharedNumber(ctx.sql, [other.org.id]);
    const left = await createSharedNumber(ctx.sql, [t.org.id]);
    await fill(t.org.id, mine, "mine", 3);
    await fill(other.org.id, theirs, "theirs", 3);
    await fill(t.org.id, left, "left", 3);
    await ctx.sql`delete from hosted_sim_organizations where hosted_sim_id = ${left.id} and organization_id = ${t.org.id}`;
    const res = await inbox(t.token);
    expect(res.body.data.map((m: { text: string }) => m.text)).toEqual(["mine 3", "mine 2", "mine 1"]);
    expect(res.body.meta.next_before).toBeNull();
    const foreign = await inbox(t.token, "", { "x-organization-id": String(other.org.id) });
    expect(foreign.status).toBe(404);
  });

  test("API keys need messages.read (checked before the query); bounds are 422", async () => {
    const t = await createTenant(ctx.sql);
    const reader = await createApiKey(ctx.sql, t.org.id, ["messages.read"]);
    const locker = await createApiKey(ctx.sql, t.org.id, ["numbers.lock"]);
    expect((await inbox(reader.key)).status).toBe(200);
    const refused = await inbox(locker.key, "per_page=0");
    expect(refused.status).toBe(403);
    expectErrorShape(refused.body, "permission_denied");
    for (const q of ["per_page=0", "per_page=101", "before=0", "before=abc", `q=${"x".repeat(201)}`, "has_code=yes"]) {
      const res = await inbox(t.token, q);
      expect(`${q} ${res.status}`).toBe(`${q} 422`);
      expectErrorShape(res.body, "validation_failed");
    }
  });
});
