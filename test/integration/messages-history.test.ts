import { beforeAll, describe, expect, test } from "bun:test";
import { storeInboundMessages } from "../../server/messages/inbound";
import { createApiKey, createTenant } from "../fixtures";
import { createSharedNumber, receiveSms } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

/** A tenant with a number holding `count` inbound messages "msg 1" .. "msg N" (oldest first). */
async function numberWithMessages(count: number) {
  const tenant = await createTenant(ctx.sql);
  const sim = await createSharedNumber(ctx.sql, [tenant.org.id]);
  await ctx.sql`
    with m as (
      insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source, received_at, created_at)
      select ${sim.id}, ${sim.number}, 'inbound', '+15550000001', ${sim.number}, 'msg ' || i, 'received', 'provider',
             now() - make_interval(secs => ${count} - i), now() - make_interval(secs => ${count} - i)
      from generate_series(1, ${count}) i order by i
      returning id)
    insert into message_visibility (organization_id, hosted_sim_id, message_id) select ${tenant.org.id}, ${sim.id}, id from m`;
  return { ...tenant, sim };
}

const get = (token: string, query: string) => ctx.request("GET", `/api/messages?${query}`, { token });

describe("GET /api/messages pagination", () => {
  test("default 50 per page, newest first, API.md §0 meta and links", async () => {
    const t = await numberWithMessages(120);
    const res = await get(t.token, `hosted_sim=${t.sim.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(50);
    expect(res.body.data[0].text).toBe("msg 120");
    expect(res.body.data[49].text).toBe("msg 71");
    expect(res.body.meta).toEqual({ current_page: 1, per_page: 50, total: 120, last_page: 3, from: 1, to: 50, path: "http://localhost:3000/api/messages" });
    expect(res.body.links.prev).toBeNull();
    expect(res.body.links.next).toContain("page=2");
    expect(res.body.links.next).toContain(`hosted_sim=${t.sim.id}`);
    const last = await get(t.token, `hosted_sim=${t.sim.id}&page=3`);
    expect(last.body.data.map((m: any) => m.text)).toEqual(Array.from({ length: 20 }, (_, i) => `msg ${20 - i}`));
    expect(last.body.meta).toMatchObject({ current_page: 3, from: 101, to: 120 });
    expect(last.body.links.next).toBeNull();
  });

  test("bounds: per_page and limit 1..100 (0 and 101 refused), per_page wins over limit, page past the end is empty", async () => {
    const t = await numberWithMessages(120);
    for (const q of ["per_page=0", "per_page=101", "limit=0", "limit=101", "page=0", "page=-1", "per_page=abc", "page=1.5", "per_page=2.5", "limit=1.5"]) {
      const res = await get(t.token, `hosted_sim=${t.sim.id}&${q}`);
      expect(`${q} ${res.status}`).toBe(`${q} 422`);
      expectErrorShape(res.body, "validation_failed");
    }
    expect((await get(t.token, `hosted_sim=${t.sim.id}&per_page=1`)).body.data).toHaveLength(1);
    expect((await get(t.token, `hosted_sim=${t.sim.id}&per_page=100`)).body.data).toHaveLength(100);
    expect((await get(t.token, `hosted_sim=${t.sim.id}&limit=7`)).body.meta.per_page).toBe(7);
    expect((await get(t.token, `hosted_sim=${t.sim.id}&limit=7&per_page=9`)).body.meta.per_page).toBe(9);
    const past = await get(t.token, `hosted_sim=${t.sim.id}&page=99`);
    expect(past.status).toBe(200);
    expect(past.body.data).toEqual([]);
    expect(past.body.meta).toMatchObject({ current_page: 99, total: 120, last_page: 3, from: null, to: null });
  });

  test("pages stay contiguous after a message is removed (gap in seq: offset fallback)", async () => {
    const t = await numberWithMessages(120);
    await ctx.sql`
      delete from messages where hosted_sim_id = ${t.sim.id} and text = 'msg 60'`;
    const page2 = await get(t.token, `hosted_sim=${t.sim.id}&page=2`);
    expect(page2.body.meta.total).toBe(119);
    const expected = Array.from({ length: 51 }, (_, i) => `msg ${70 - i}`).filter((x) => x !== "msg 60");
    expect(page2.body.data.map((m: any) => m.text)).toEqual(expected);
    const page3 = await get(t.token, `hosted_sim=${t.sim.id}&page=3`);
    expect(page3.body.data.map((m: any) => m.text)).toEqual(Array.from({ length: 19 }, (_, i) => `msg ${19 - i}`));
  });

  test("hosted_sim is required and must be an id", async () => {
    const t = await createTenant(ctx.sql);
    for (const q of ["", "hosted_sim=", "hosted_sim=x", "hosted_sim=0", "hosted_sim=1.5", "hosted_sim=99999999999999999999"]) {
      const res = await get(t.token, q);
      expect(`${q} ${res.status}`).toBe(`${q} 422`);
    }
  });
});

describe("GET /api/messages filters", () => {
  test("direction, from, since/until and q narrow the list and the total", async () => {
    const t = await numberWithMessages(0);
    const base = Date.now() - 3_600_000;
    const at = (min: number) => new Date(base + min * 60_000);
    await receiveSms(ctx.sql, t.sim.id, { from: "+15551110001", text: "Your code is 1234", receivedAt: at(0) });
    await receiveSms(ctx.sql, t.sim.id, { from: "+15551110002", text: "50% off today_only", receivedAt: at(10) });
    await receiveSms(ctx.sql, t.sim.id, { from: "+15551110001", text: "CODE 9999", receivedAt: at(20) });
    await ctx.sql`update organizations set plan = 'pro' where id = ${t.org.id}`;
    const sent = await ctx.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: t.sim.id, to: "+15551110003", text: "outbound code" } });
    expect(sent.status).toBe(202);

    const texts = async (q: string) => {
      const res = await get(t.token, `hosted_sim=${t.sim.id}&${q}`);
      expect(res.status).toBe(200);
      expect(res.body.meta.total).toBe(res.body.data.length);
      return res.body.data.map((m: any) => m.text);
    };
    expect(await texts("direction=inbound")).toEqual(["CODE 9999", "50% off today_only", "Your code is 1234"]);
    expect(await texts("direction=outbound")).toEqual(["outbound code"]);
    expect(await texts(`from=${encodeURIComponent("+15551110001")}`)).toEqual(["CODE 9999", "Your code is 1234"]);
    expect(await texts("q=code")).toEqual(["outbound code", "CODE 9999", "Your code is 1234"]);
    expect(await texts("q=code&direction=inbound")).toEqual(["CODE 9999", "Your code is 1234"]);
    // LIKE wildcards in q are plain characters.
    expect(await texts(`q=${encodeURIComponent("50%")}`)).toEqual(["50% off today_only"]);
    expect(await texts("q=_")).toEqual(["50% off today_only"]);
    expect(await texts(`since=${at(5).toISOString()}&until=${at(20).toISOString()}`)).toEqual(["50% off today_only"]);
    expect(await texts(`since=${at(5).toISOString()}&direction=inbound`)).toEqual(["CODE 9999", "50% off today_only"]);
    for (const q of ["direction=sideways", "since=yesterday", "until=0000-01-01T00:00:00Z", `q=${"x".repeat(201)}`, "q=%00"]) {
      expect(`${q} ${(await get(t.token, `hosted_sim=${t.sim.id}&${q}`)).status}`).toBe(`${q} 422`);
    }
  });

  test("API keys need messages.read; message objects carry API.md's fields", async () => {
    const t = await numberWithMessages(1);
    const reader = await createApiKey(ctx.sql, t.org.id, ["messages.read"]);
    const numbersOnly = await createApiKey(ctx.sql, t.org.id, ["numbers.read", "numbers.lock", "webhooks.receive"]);
    const res = await get(reader.key, `hosted_sim=${t.sim.id}`);
    expect(res.status).toBe(200);
    const m = res.body.data[0];
    expect(Object.keys(m).sort()).toEqual(
      [
        "id",
        "hosted_sim_id",
        "number",
        "direction",
        "from",
        "to",
        "text",
        "status",
        "source",
        "device_id",
        "sim_slot",
        "external_id",
        "team_id",
        "locked",
        "error",
        "attempts",
        "code",
        "received_at",
        "sent_at",
        "send_at",
        "expires_at",
        "batch_id",
        "status_updated_at",
        "created_at",
        "updated_at",
      ].sort(),
    );
    expect((await ctx.request("GET", `/api/messages/${m.id}`, { token: reader.key })).body.data).toEqual(m);
    for (const path of [`/api/messages?hosted_sim=${t.sim.id}`, `/api/messages/${m.id}`]) {
      const denied = await ctx.request("GET", path, { token: numbersOnly.key });
      expect(denied.status).toBe(403);
      expectErrorShape(denied.body, "permission_denied");
    }
    const send = await ctx.request("POST", "/api/messages", { token: reader.key, body: { hosted_sim: t.sim.id, to: "+15550001234", text: "x" } });
    expect(send.status).toBe(403);
    expectErrorShape(send.body, "permission_denied");
  });

  test("another organization's message answers 404", async () => {
    const t = await numberWithMessages(1);
    const other = await createTenant(ctx.sql);
    const id = (await get(t.token, `hosted_sim=${t.sim.id}`)).body.data[0].id;
    const res = await ctx.request("GET", `/api/messages/${id}`, { token: other.token });
    expect(res.status).toBe(404);
    expectErrorShape(res.body, "not_found");
    expect((await ctx.request("GET", "/api/messages/99999999999", { token: t.token })).status).toBe(404);
  });
});

describe("a batch of inbound messages (storeInboundMessages)", () => {
  test("each organization's view numbers the batch's messages on from its last seq, counts them once, and pages them in order", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const shared = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const own = await createSharedNumber(ctx.sql, [a.org.id]);
    await receiveSms(ctx.sql, shared.id, { text: "before" });
    const input = (simId: number, text: string) => ({ hostedSimId: simId, from: "+15550001111", text, source: "provider" as const, receivedAt: new Date() });
    const stored = await ctx.sql.begin((tx) =>
      storeInboundMessages(tx, [input(shared.id, "s1"), input(own.id, "o1"), input(shared.id, "s2"), input(999_999_999, "nowhere"), input(shared.id, "s3")]),
    );
    expect(stored[3]).toBeNull();
    const ids = stored.filter((s) => s !== null).map((s) => s!.messageId);
    expect(ids).toEqual([...ids].sort((p, q) => p - q));
    expect(stored[0]!.visibility.map((v) => v.organizationId).sort()).toEqual([a.org.id, b.org.id].sort());

    const seqs = await ctx.sql<{ organization_id: number; hosted_sim_id: number; seq: number; text: string }[]>`
      select v.organization_id, v.hosted_sim_id, v.seq, m.text from message_visibility v join messages m on m.id = v.message_id
      where v.hosted_sim_id in (${shared.id}, ${own.id}) order by v.organization_id, v.hosted_sim_id, v.seq`;
    const view = (org: number, sim: number) => seqs.filter((r) => r.organization_id === org && r.hosted_sim_id === sim).map((r) => `${r.seq}:${r.text}`);
    expect(view(a.org.id, shared.id)).toEqual(["1:before", "2:s1", "3:s2", "4:s3"]);
    expect(view(b.org.id, shared.id)).toEqual(["1:before", "2:s1", "3:s2", "4:s3"]);
    expect(view(a.org.id, own.id)).toEqual(["1:o1"]);
    const counts = await ctx.sql<{ organization_id: number; hosted_sim_id: number; total: number; inbound: number; last_seq: number }[]>`
      select organization_id, hosted_sim_id, total::int, inbound::int, last_seq::int from message_visibility_counts
      where hosted_sim_id in (${shared.id}, ${own.id}) order by organization_id, hosted_sim_id`;
    expect(counts.map(({ total, inbound, last_seq }) => [total, inbound, last_seq])).toEqual(
      counts.map((c) => (c.hosted_sim_id === own.id ? [1, 1, 1] : [4, 4, 4])),
    );
    const [sim] = await ctx.sql<{ n: number }[]>`select messages_received_count::int as n from hosted_sims where id = ${shared.id}`;
    expect(sim!.n).toBe(4);

    const page = await get(b.token, `hosted_sim=${shared.id}&per_page=2&page=1`);
    expect(page.body.data.map((m: { text: string }) => m.text)).toEqual(["s3", "s2"]);
    expect(page.body.meta.total).toBe(4);
    // One more, alone (as the provider callback stores it): numbered on from the batch.
    await receiveSms(ctx.sql, shared.id, { text: "after" });
    expect((await get(a.token, `hosted_sim=${shared.id}&per_page=1&page=1`)).body.data[0].text).toBe("after");
    const [last] = await ctx.sql<{ seq: number }[]>`
      select max(seq)::int as seq from message_visibility where organization_id = ${a.org.id} and hosted_sim_id = ${shared.id}`;
    expect(last!.seq).toBe(5);
  });
});

describe("message reads span the caller's organizations", () => {
  test("a number of the caller's second organization: its history and its messages, unless X-Organization-Id or an API key names another", async () => {
    const a = await createTenant(ctx.sql);
    const d = await createTenant(ctx.sql);
    await ctx.sql`insert into memberships (user_id, organization_id, role) values (${a.user.id}, ${d.org.id}, 'member')`;
    const sim = await createSharedNumber(ctx.sql, [d.org.id]);
    await receiveSms(ctx.sql, sim.id, { text: "for D" });
    const history = await ctx.request("GET", `/api/messages?hosted_sim=${sim.id}`, { token: a.token });
    expect(history.status).toBe(200);
    expect(history.body.data.map((m: { text: string }) => m.text)).toEqual(["for D"]);
    const id = history.body.data[0].id;
    expect((await ctx.request("GET", `/api/messages/${id}`, { token: a.token })).status).toBe(200);
    const inA = { "x-organization-id": String(a.org.id) };
    expect((await ctx.request("GET", `/api/messages?hosted_sim=${sim.id}`, { token: a.token, headers: inA })).status).toBe(404);
    expect((await ctx.request("GET", `/api/messages/${id}`, { token: a.token, headers: inA })).status).toBe(404);
    const key = await createApiKey(ctx.sql, a.org.id, ["messages.read"]);
    expect((await ctx.request("GET", `/api/messages/${id}`, { token: key.key })).status).toBe(404);
    expect((await ctx.request("GET", `/api/messages?hosted_sim=${sim.id}`, { token: key.key })).status).toBe(404);
  });
});
