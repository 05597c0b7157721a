import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storeInboundMessages } from "../../server/messages/inbound";
import type { Delivery as BusMessage } from "../../server/realtime/hub";
import { createApiKey, createTenant } from "../fixtures";
import { createByosNumber, createSharedNumber, eventually, receiveSms } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";
import { createHook, createNumber, createTeam } from "./webhooks-helpers";

/**
 * Issue 17 item 1: the one-time code of each inbound message, stored with it and shown wherever
 * the message is (single read, history, `message.received` over realtime and webhooks), and the
 * history's `has_code` filter. The job queue runs, so the fan-out really publishes and enqueues.
 */
let ctx: TestContext;
const events: BusMessage[] = [];
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.realtime.watch((m) => events.push(m));
  ctx.services.start();
}, 60_000);
afterAll(() => ctx.close());

const history = (token: string, query: string) => ctx.request("GET", `/api/messages?${query}`, { token });

describe("code on inbound messages", () => {
  test("extracted when stored: the single message and the history show it, null when the text has none", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const coded = await receiveSms(ctx.sql, sim.id, { text: "Your WhatsApp code: 482-913\n\nDon't share this code with others" });
    const plain = await receiveSms(ctx.sql, sim.id, { text: "Your order #112-4829134 ships on 03/12, total $48.29" });

    const one = await ctx.request("GET", `/api/messages/${coded.messageId}`, { token: t.token });
    expect(one.status).toBe(200);
    expect(one.body.data.code).toBe("482913");
    expect((await ctx.request("GET", `/api/messages/${plain.messageId}`, { token: t.token })).body.data.code).toBeNull();
    const page = await history(t.token, `hosted_sim=${sim.id}`);
    expect(page.body.data.map((m: { id: number; code: string | null }) => [m.id, m.code])).toEqual([
      [plain.messageId, null],
      [coded.messageId, "482913"],
    ]);
  });

  test("a batch of messages (the device path) gets each its own code", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const texts = ["G-305118 is your Google verification code.", "See you at 18:30, room 4829", "【支付宝】验证码 771025，请勿泄露。"];
    const stored = await ctx.sql.begin((tx) =>
      storeInboundMessages(
        tx,
        texts.map((text) => ({ hostedSimId: sim.id, from: "+15550001111", text, source: "device" as const, receivedAt: new Date() })),
      ),
    );
    const codes = await ctx.sql<{ id: number; code: string | null }[]>`
      select id, code from messages where id in ${ctx.sql(stored.map((s) => s!.messageId))} order by id`;
    expect(codes.map((c) => c.code)).toEqual(["G-305118", null, "771025"]);
  });

  test("outbound messages have code null, whatever their text", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id);
    const sent = await ctx.request("POST", "/api/messages", {
      token: t.token,
      body: { hosted_sim: byos.hostedSimId, to: "+15550002222", text: "Your code is 482913" },
    });
    expect(sent.status).toBe(202);
    expect(sent.body.data.code).toBeNull();
  });
});

describe("GET /api/messages?has_code", () => {
  test("true: only messages with a code, newest first, total and pages counted on them; false: the others", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const ids: Record<string, number> = {};
    for (let i = 1; i <= 7; i++) {
      const text = i % 2 === 1 ? `Your verification code is ${100000 + i}` : `Balance $${i},000.00 on 03/12`;
      ids[i] = (await receiveSms(ctx.sql, sim.id, { text })).messageId;
    }
    const coded = await history(t.token, `hosted_sim=${sim.id}&has_code=true&per_page=3`);
    expect(coded.status).toBe(200);
    expect(coded.body.data.map((m: { code: string }) => m.code)).toEqual(["100007", "100005", "100003"]);
    expect(coded.body.meta).toMatchObject({ total: 4, last_page: 2 });
    expect(coded.body.links.next).toContain("has_code=true");
    const second = await history(t.token, `hosted_sim=${sim.id}&has_code=true&per_page=3&page=2`);
    expect(second.body.data.map((m: { id: number }) => m.id)).toEqual([ids[1]]);
    const plain = await history(t.token, `hosted_sim=${sim.id}&has_code=false`);
    expect(plain.body.data.map((m: { id: number }) => m.id)).toEqual([ids[6], ids[4], ids[2]]);
    expect(plain.body.meta.total).toBe(3);
    // With a filter on the message's columns too.
    const both = await history(t.token, `hosted_sim=${sim.id}&has_code=true&q=100005`);
    expect(both.body.data.map((m: { id: number }) => m.id)).toEqual([ids[5]]);
    expect(both.body.meta.total).toBe(1);
  });

  test("anything but true or false is refused with 422; an API key needs messages.read as for the history", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    for (const v of ["yes", "1", "", "TRUE"]) {
      const res = await history(t.token, `hosted_sim=${sim.id}&has_code=${v}`);
      expect(`${v} ${res.status}`).toBe(`${v} 422`);
      expectErrorShape(res.body, "validation_failed");
    }
    const { key } = await createApiKey(ctx.sql, t.org.id, ["numbers.read"]);
    expect((await history(key, `hosted_sim=${sim.id}&has_code=true`)).status).toBe(403);
  });
});

describe("message.received carries the code", () => {
  test("realtime and the webhook body both have message.code", async () => {
    const t = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, t.org.id);
    const hook = await createHook(ctx, t.token, { url: "http://127.0.0.1:9/unused" }, [{ teamId: team.id, mode: "always" }]);
    const sim = await createNumber(ctx.sql, [{ orgId: t.org.id, teamId: team.id }]);
    const { messageId } = await receiveSms(ctx.sql, sim.id, { text: "[TikTok] 305118 is your verification code, valid for 5 minutes." });

    const event = await eventually(() => events.find((e) => e.event === "message.received" && (e.data as any).message.id === messageId), 10_000);
    expect((event.data as any).message.code).toBe("305118");
    const delivery = await eventually(async () => {
      const [row] = await ctx.sql<{ body: string }[]>`
        select body from webhook_deliveries where message_id = ${messageId} and webhook_integration_id = ${hook.id}`;
      return row;
    }, 10_000);
    expect(JSON.parse(delivery.body).data.code).toBe("305118");
  }, 30_000);
});
