import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { providerSignature } from "../../server/provider/signature";
import { createTenant } from "../fixtures";
import { providerPost } from "../fixtures-devices";
import { createByosNumber, createSharedNumber, eventually, randomNumber } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/**
 * The provider's status callback (POST /api/provider/messages/{id}/status): signed like the
 * inbound callback, it moves a pool-number message on and appends its event; a duplicate or
 * late report changes nothing, a forged one is refused.
 */
const sids = new Map<string, string>();
const provider = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const body = (await req.json()) as { to: string; status_callback?: string };
    const sid = `SM${crypto.randomUUID().replaceAll("-", "")}`;
    sids.set(body.to, sid);
    return Response.json({ sid, status: "queued" }, { status: 201 });
  },
});

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ PROVIDER_API_URL: `http://127.0.0.1:${provider.port}`, PROVIDER_AUTH_TOKEN: "status-callback-test-token" });
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await ctx.close();
  provider.stop(true);
});

const path = (id: number) => `/api/provider/messages/${id}/status`;
const callback = (id: number, fields: Record<string, string>, opts: { signature?: string; token?: string } = {}) =>
  providerPost(ctx, { AccountSid: "AC1", ...fields }, { ...opts, path: path(id) });
const show = async (token: string, id: number) => (await ctx.request("GET", `/api/messages/${id}`, { token })).body.data;

/** A pool-number send the provider accepted (`sent`, its sid recorded). */
async function sentMessage() {
  const t = await createTenant(ctx.sql);
  const sim = await createSharedNumber(ctx.sql, [t.org.id]);
  const to = randomNumber();
  const res = await ctx.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: sim.id, to, text: "report back" } });
  expect(res.status).toBe(202);
  const id = res.body.data.id as number;
  await eventually(async () => (await show(t.token, id)).status === "sent", 10_000, `message ${id} sent`);
  return { t, id, sid: sids.get(to)! };
}

type Listed = { type: string; data: { message: { id: number; status: string; error: string | null; attempts: number } } };

/**
 * The message's status events as GET /api/events lists them, once `final` is among them: the list
 * shows an event when every transaction that began before it has ended (docs/events.md), which on
 * a busy database server can be a moment after the commit.
 */
async function listedEvents(token: string, id: number, final: string) {
  return eventually(
    async () => {
      const res = await ctx.request("GET", "/api/events?types=message.sent,message.delivered,message.failed&per_page=100", { token });
      expect(res.status).toBe(200);
      const own = (res.body.data as Listed[]).filter((e) => e.data.message.id === id);
      return own.some((e) => e.type === final) && own;
    },
    10_000,
    `${final} listed`,
  );
}

describe("provider status callback", () => {
  test("delivered: the message moves on and message.delivered is listed once; a repeat and a late `sent` change nothing", async () => {
    const { t, id, sid } = await sentMessage();
    const first = await callback(id, { MessageSid: sid, MessageStatus: "delivered" });
    expect(first.status).toBe(200);
    expect(first.text).toBe("<Response/>");
    expect(await show(t.token, id)).toMatchObject({ status: "delivered", external_id: sid, attempts: 1, error: null });
    for (const status of ["delivered", "sent", "sending", "queued"]) expect((await callback(id, { MessageSid: sid, MessageStatus: status })).status).toBe(200);
    expect((await show(t.token, id)).status).toBe("delivered");
    const listed = await listedEvents(t.token, id, "message.delivered");
    expect(listed.map((e) => e.type)).toEqual(["message.sent", "message.delivered"]);
    expect(listed[1]!.data.message).toMatchObject({ status: "delivered", attempts: 1 });
  });

  test("undelivered: failed with the provider's reason, in message.failed too", async () => {
    const { t, id, sid } = await sentMessage();
    const res = await callback(id, { MessageSid: sid, MessageStatus: "undelivered", ErrorCode: "30003", ErrorMessage: "Unreachable destination handset" });
    expect(res.status).toBe(200);
    const error = "Unreachable destination handset (provider error 30003)";
    expect(await show(t.token, id)).toMatchObject({ status: "failed", error });
    expect((await callback(id, { MessageSid: sid, MessageStatus: "delivered" })).status).toBe(200);
    expect((await show(t.token, id)).status).toBe("failed");
    const failed = (await listedEvents(t.token, id, "message.failed")).filter((e) => e.type === "message.failed");
    expect(failed.map((e) => e.data.message.error)).toEqual([error]);
  });

  test("forged, missing or re-aimed signature: 403 invalid_signature, nothing changes", async () => {
    const { t, id, sid } = await sentMessage();
    const fields = { MessageSid: sid, MessageStatus: "failed", AccountSid: "AC1" };
    const wrongToken = await callback(id, fields, { token: "not-the-provider-token" });
    expect(wrongToken.status).toBe(403);
    expectErrorShape(wrongToken.body, "invalid_signature");
    const none = await ctx.request("POST", path(id), { form: fields });
    expect(none.status).toBe(403);
    expectErrorShape(none.body, "invalid_signature");
    // A valid signature for another message's URL does not move this one: the id is part of what is signed.
    const other = providerSignature(ctx.config.PROVIDER_AUTH_TOKEN, `${ctx.config.PUBLIC_URL}${path(id + 1)}`, fields);
    expect((await callback(id, fields, { signature: other })).status).toBe(403);
    // Checked before anything is read: a forged callback with broken fields is still 403, not 422.
    expect((await callback(id, { MessageStatus: "" }, { token: "forged" })).status).toBe(403);
    expect((await show(t.token, id)).status).toBe("sent");
  });

  test("another MessageSid than the provider's answer changes nothing; unknown or device messages are 404; missing fields 422", async () => {
    const { t, id } = await sentMessage();
    expect((await callback(id, { MessageSid: "SMsomeoneelse", MessageStatus: "delivered" })).status).toBe(200);
    expect((await show(t.token, id)).status).toBe("sent");
    const unknown = await callback(999_999_999, { MessageSid: "SMx", MessageStatus: "delivered" });
    expect(unknown.status).toBe(404);
    expectErrorShape(unknown.body, "not_found");
    const byos = await createByosNumber(ctx.sql, t.org.id);
    const viaPhone = (await ctx.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: byos.hostedSimId, to: randomNumber(), text: "x" } }))
      .body.data.id;
    expect((await callback(viaPhone, { MessageSid: "SMx", MessageStatus: "delivered" })).status).toBe(404);
    const missing = await callback(id, { MessageStatus: "delivered" });
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body.errors)).toEqual(["MessageSid"]);
  });

  test("concurrent duplicate reports: one move, one event", async () => {
    const { t, id, sid } = await sentMessage();
    const answers = await Promise.all(Array.from({ length: 10 }, () => callback(id, { MessageSid: sid, MessageStatus: "delivered" })));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect((await listedEvents(t.token, id, "message.delivered")).filter((e) => e.type === "message.delivered")).toHaveLength(1);
  });
});
