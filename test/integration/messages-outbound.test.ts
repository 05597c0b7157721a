import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { moveStatus } from "../../server/messages/outbound-store";
import { paceSims } from "../../server/messages/pacer";
import { CANCELLABLE } from "../../server/messages/status";
import type { Delivery as BusMessage } from "../../server/realtime/hub";
import { createApiKey, createTenant } from "../fixtures";
import { registerDevice, verificationSms } from "../fixtures-devices";
import { logRows } from "../fixtures-events";
import { createByosNumber, createSharedNumber, eventually, lockWaiters, randomNumber, unpaced, useQuota } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/**
 * Outbound SMS through both paths, with the job queue running: pool numbers through a tiny
 * local provider API (docs/api-notes.md contract), BYOS numbers through their device.
 */
type Sent = { from: string; to: string; body: string; status_callback?: string; authorization: string | null };
const received: Sent[] = [];
/** Answers the provider gives, per recipient, in order; the last one repeats. 201 when none is set. */
const script = new Map<string, number[]>();
const provider = Bun.serve({
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as Sent;
    received.push({ ...body, authorization: req.headers.get("authorization") });
    const answers = script.get(body.to) ?? [201];
    const status = answers.length > 1 ? answers.shift()! : answers[0]!;
    if (status === 201) return Response.json({ sid: `SM${crypto.randomUUID().replaceAll("-", "")}`, status: "queued" }, { status });
    return Response.json({ message: `scripted ${status}` }, { status });
  },
});

let ctx: TestContext;
const events: BusMessage[] = [];
beforeAll(async () => {
  ctx = await createTestContext({
    PROVIDER_API_URL: `http://127.0.0.1:${provider.port}`,
    PROVIDER_AUTH_TOKEN: "outbound-test-token",
    OUTBOUND_DEVICE_TIMEOUT_SECONDS: "1",
    OUTBOUND_PROVIDER_RETRY_SECONDS: "0.05",
  });
  ctx.services.realtime.watch((m) => events.push(m));
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await ctx.close();
  provider.stop(true);
});

const send = (token: string, body: unknown) => ctx.request("POST", "/api/messages", { token, body });
const show = async (token: string, id: number) => (await ctx.request("GET", `/api/messages/${id}`, { token })).body.data;
const statusEvents = (id: number) => events.filter((e) => e.event === "message.status_changed" && (e.data as any).message.id === id);

async function settled(token: string, id: number, status: string) {
  return eventually(
    async () => {
      const m = await show(token, id);
      return m.status === status && m;
    },
    10_000,
    `message ${id} ${status}`,
  );
}

describe("POST /api/messages through the provider API (pool numbers)", () => {
  test("202 queued, then sent with the provider's sid; the provider gets from, to, body and the Bearer token", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "hello from the pool" });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ direction: "outbound", status: "queued", source: "api", from: sim.number, to, hosted_sim_id: sim.id });
    const sent = await settled(t.token, res.body.data.id, "sent");
    expect(sent.external_id).toMatch(/^SM/);
    expect(sent.sent_at).not.toBeNull();
    expect(sent.attempts).toBe(1);
    expect(received.filter((r) => r.to === to)).toEqual([
      {
        from: sim.number,
        to,
        body: "hello from the pool",
        status_callback: `${ctx.config.PUBLIC_URL}/api/provider/messages/${sent.id}/status`,
        authorization: "Bearer outbound-test-token",
      },
    ]);
    const seen = await eventually(() => {
      const list = statusEvents(res.body.data.id).filter((e) => e.channel === `private-organization.${t.org.id}`);
      return list.length >= 3 && list;
    });
    expect(seen.map((e) => (e.data as any).message.status)).toEqual(["queued", "sending", "sent"]);
    // One log row per status, to the sending organization only; realtime carries each row's cursor.
    const rows = (await logRows(ctx.services, [t.org.id])).filter((r) => (r.payload as any).message.id === res.body.data.id);
    expect(rows.map((r) => r.type)).toEqual(["message.queued", "message.sending", "message.sent"]);
    expect(seen.map((e) => e.data.event_id)).toEqual(rows.map((r) => r.cursor));
    expect(rows[0]!.payload).toMatchObject({ hosted_sim: { id: sim.id, number: sim.number }, team: null });
  });

  test("a 4xx refusal fails the message at once with the provider's reason", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    script.set(to, [400]);
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "refused" });
    const failed = await settled(t.token, res.body.data.id, "failed");
    expect(failed.error).toContain("scripted 400");
    expect(received.filter((r) => r.to === to)).toHaveLength(1);
  });

  test("5xx and 429 are retried on the job queue until the provider accepts", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    script.set(to, [503, 429, 201]);
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "eventually" });
    const sent = await settled(t.token, res.body.data.id, "sent");
    expect(received.filter((r) => r.to === to)).toHaveLength(3);
    expect(sent.attempts).toBe(3);
  });

  test("a provider that never recovers fails the message after the last attempt", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    const to = randomNumber();
    script.set(to, [500]);
    const res = await send(t.token, { hosted_sim: sim.id, to, text: "never" });
    const failed = await settled(t.token, res.body.data.id, "failed");
    expect(failed.error).toContain("500");
    expect(received.filter((r) => r.to === to)).toHaveLength(6);
    expect(failed.attempts).toBe(6);
  }, 30_000);
});

describe("POST /api/messages through the device (BYOS numbers)", () => {
  test("message.send on the device's channel; the device reports sending → sent → delivered", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    await unpaced(ctx.sql, t.org.id);
    const res = await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770001", text: "via the phone" });
    expect(res.status).toBe(202);
    const id = res.body.data.id;
    expect(res.body.data).toMatchObject({ status: "queued", device_id: byos.deviceId, sim_slot: 1 });
    const order = await eventually(() => events.find((e) => e.event === "message.send" && e.channel === `private-device.${byos.deviceId}`));
    expect(order.data).toEqual({
      message: { id, hosted_sim_id: byos.hostedSimId, number: byos.number, to: "+15557770001", text: "via the phone", sim_slot: 1 },
      event_id: expect.any(String),
    });

    const report = (status: string, extra: Record<string, unknown> = {}, token = t.token, device = byos.deviceId) =>
      ctx.request("POST", `/api/byos/devices/${device}/messages/${id}/status`, { token, body: { status, ...extra } });
    expect((await report("sending")).body.data.status).toBe("sending");
    const sent = await report("sent");
    expect(sent.status).toBe(200);
    expect(sent.body.data.sent_at).not.toBeNull();
    expect((await report("delivered")).body.data.status).toBe("delivered");
    expect((await report("delivered")).status).toBe(200);
    // A late or repeated report (a step already passed) changes nothing and is not an error.
    const back = await report("sent");
    expect(back.status).toBe(200);
    expect(back.body.data).toMatchObject({ status: "delivered", attempts: 1 });
    expect((await report("failed", { error: "late" })).status).toBe(409);
    expect((await report("sent", {}, t.token, byos.deviceId + 100_000)).status).toBe(404);
    expect((await report("bogus")).status).toBe(422);
    const key = await createApiKey(ctx.sql, t.org.id, ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"]);
    expectErrorShape((await report("sent", {}, key.key)).body, "api_key_not_allowed");
    const other = await createTenant(ctx.sql);
    expect((await report("sent", {}, other.token)).status).toBe(404);
    const announced = await eventually(() => {
      const statuses = new Set(statusEvents(id).map((e) => (e.data as any).message.status));
      return statuses.size >= 4 && [...statuses];
    });
    expect(announced).toEqual(["queued", "sending", "sent", "delivered"]);
  });

  test("a device failure is kept with its error", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    await unpaced(ctx.sql, t.org.id);
    const id = (await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770002", text: "x" })).body.data.id;
    await eventually(() => events.find((e) => e.event === "message.send" && (e.data as any).message.id === id));
    const res = await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, {
      token: t.token,
      body: { status: "failed", error: "RESULT_ERROR_NO_SERVICE" },
    });
    expect(res.body.data).toMatchObject({ status: "failed", error: "RESULT_ERROR_NO_SERVICE" });
  });

  test("no device picks it up in time: failed by the timeout job, the phone told not to send it; a late report is refused", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    await unpaced(ctx.sql, t.org.id);
    const id = (await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770003", text: "nobody home" })).body.data.id;
    const failed = await settled(t.token, id, "failed");
    expect(failed.error).toContain("No device picked up");
    expect(failed.attempts).toBe(0);
    // The phone it was handed to is told not to send it late, as a cancel tells it.
    const calledOff = await eventually(() => events.find((e) => e.event === "message.cancelled" && (e.data as any).message?.id === id));
    expect(calledOff.channel).toBe(`private-device.${byos.deviceId}`);
    const late = await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, { token: t.token, body: { status: "sent" } });
    expect(late.status).toBe(409);
    expectErrorShape(late.body, "invalid_state");
  });

  test("a phone revoked with sends handed to it: the one it had not taken up fails at once and is called off; the one it took up it may still report on, forward only", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    await unpaced(ctx.sql, t.org.id);
    const handed = async (text: string) => {
      const id = (await send(t.token, { hosted_sim: byos.hostedSimId, to: randomNumber(), text })).body.data.id;
      await eventually(() => events.find((e) => e.event === "message.send" && (e.data as any).message.id === id), 10_000, `send ${id} handed over`);
      return id;
    };
    const untaken = await handed("never taken up");
    const taken = await handed("taken up");
    const report = (id: number, status: string) =>
      ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, { token: t.token, body: { status } });
    expect((await report(taken, "sending")).status).toBe(200);
    expect((await ctx.request("DELETE", `/api/byos/devices/${byos.deviceId}`, { token: t.token })).status).toBe(204);

    // At once, with the revocation: no waiting for the pick-up timeout.
    const failed = await show(t.token, untaken);
    expect(failed).toMatchObject({ status: "failed" });
    expect(failed.error).toContain("had not taken it up");
    const callOff = (e: BusMessage) =>
      e.channel === `private-device.${byos.deviceId}` && e.event === "message.cancelled" && (e.data as any).message.id === untaken;
    await eventually(() => events.find(callOff), 10_000, "the phone told not to send it");
    expect((await ctx.request("GET", "/api/usage", { token: t.token })).body.data.monthly_messages.used).toBe(2);
    const refused = await report(untaken, "sending");
    expect(refused.status).toBe(409);
    expectErrorShape(refused.body, "invalid_state");

    expect((await report(taken, "sent")).body.data.status).toBe("sent");
    expect((await report(taken, "delivered")).body.data.status).toBe("delivered");
    expect((await show(t.token, taken)).status).toBe("delivered");
    expect((await report(taken, "failed")).status).toBe(409);
  });

  test("a send waiting for a phone that is revoked fails, its unit given back, and holds up none of the number's next holder's sends", async () => {
    const a = await createTenant(ctx.sql, { plan: "pro" });
    const byos = await createByosNumber(ctx.sql, a.org.id);
    await unpaced(ctx.sql, a.org.id);
    const id = (await send(a.token, { hosted_sim: byos.hostedSimId, to: "+15557770006", text: "waits for an offline phone" })).body.data.id;
    const used = async () => (await ctx.request("GET", "/api/usage", { token: a.token })).body.data.monthly_messages.used;
    expect(await used()).toBe(1);
    expect((await ctx.request("DELETE", `/api/byos/devices/${byos.deviceId}`, { token: a.token })).status).toBe(204);
    const failed = await settled(a.token, id, "failed");
    expect(failed.error).toContain("no longer serves its number");
    expect(await used()).toBe(0);
    expect((await ctx.sql`select dispatched_at from messages where id = ${id}`)[0]!.dispatched_at).toBeNull();

    // Another organization proves the number with its phone and sends from it at once.
    const b = await createTenant(ctx.sql, { plan: "pro" });
    await unpaced(ctx.sql, b.org.id);
    const phone = await registerDevice(ctx, b.token);
    expect((await verificationSms(ctx, phone.sim_cards[0]!.verification_code, byos.number)).status).toBe(200);
    expect((await ctx.request("POST", `/api/byos/devices/${phone.id}/heartbeat`, { token: b.token, body: {} })).status).toBe(200);
    const theirs = (await ctx.request("GET", "/api/numbers", { token: b.token })).body.data.find((n: { number: string }) => n.number === byos.number);
    const next = (await send(b.token, { hosted_sim: theirs.id, to: "+15557770007", text: "the new holder's" })).body.data.id;
    await eventually(() => events.find((e) => e.event === "message.send" && (e.data as any).message.id === next), 10_000, "the new holder's send handed over");
  });

  test("a sender pool's send waiting for a phone that is revoked moves to another number of its pool and goes from there", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const [gone, other] = [await createByosNumber(ctx.sql, t.org.id), await createByosNumber(ctx.sql, t.org.id)];
    await unpaced(ctx.sql, t.org.id);
    // Both phones offline when it is accepted: it waits on the first.
    const res = await send(t.token, { hosted_sims: [gone.hostedSimId, other.hostedSimId], to: randomNumber(), text: "from the pool" });
    expect(res.body.data.hosted_sim_id).toBe(gone.hostedSimId);
    await ctx.sql`update devices set is_online = true, last_seen_at = now() where id = ${other.deviceId}`;
    expect((await ctx.request("DELETE", `/api/byos/devices/${gone.deviceId}`, { token: t.token })).status).toBe(204);
    const order = await eventually(
      () => events.find((e) => e.event === "message.send" && (e.data as any).message.id === res.body.data.id),
      10_000,
      "the send handed to the other phone",
    );
    expect(order.channel).toBe(`private-device.${other.deviceId}`);
    expect((await show(t.token, res.body.data.id)).hosted_sim_id).toBe(other.hostedSimId);
  });

  test("a send waiting when its SIM card is deactivated fails; the phone back online is not handed it", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const byos = await createByosNumber(ctx.sql, t.org.id);
    await unpaced(ctx.sql, t.org.id);
    const id = (await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770008", text: "x" })).body.data.id;
    const [card] = await ctx.sql<{ id: number }[]>`select id from sim_cards where device_id = ${byos.deviceId}`;
    const res = await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/sims/${card!.id}/deactivate`, { token: t.token });
    expect(res.status).toBe(200);
    expect((await settled(t.token, id, "failed")).error).toContain("no longer serves its number");
    expect((await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/heartbeat`, { token: t.token, body: {} })).status).toBe(200);
    const [row] = await ctx.sql`select status, dispatched_at from messages where id = ${id}`;
    expect(row).toEqual({ status: "failed", dispatched_at: null });
  });

  test("a send waiting while its SIM card moves to another slot is handed over with the slot the card is in now", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const byos = await createByosNumber(ctx.sql, t.org.id);
    await unpaced(ctx.sql, t.org.id);
    const res = await send(t.token, { hosted_sim: byos.hostedSimId, to: randomNumber(), text: "from the card, wherever it is" });
    expect(res.body.data.sim_slot).toBe(1);
    const [card] = await ctx.sql<{ id: number }[]>`select id from sim_cards where device_id = ${byos.deviceId}`;
    const moved = await ctx.request("PATCH", `/api/byos/devices/${byos.deviceId}/sims/${card!.id}`, { token: t.token, body: { sim_slot: 2 } });
    expect(moved.status).toBe(200);
    expect((await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/heartbeat`, { token: t.token, body: {} })).status).toBe(200);
    const order = await eventually(() => events.find((e) => e.event === "message.send" && (e.data as any).message.id === res.body.data.id));
    // The phone sends from the slot it is given: slot 1 would be another SIM, or none.
    expect((order.data as any).message).toMatchObject({ number: byos.number, sim_slot: 2 });
    expect((await show(t.token, res.body.data.id)).sim_slot).toBe(2);
  });

  test("a send waiting when its SIM card proves another number in its place fails, its unit given back; the phone is never handed it", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const byos = await createByosNumber(ctx.sql, t.org.id);
    await unpaced(ctx.sql, t.org.id);
    const id = (await send(t.token, { hosted_sim: byos.hostedSimId, to: randomNumber(), text: `from ${byos.number} only` })).body.data.id;
    const used = async () => (await ctx.request("GET", "/api/usage", { token: t.token })).body.data.monthly_messages.used;
    expect(await used()).toBe(1);
    const [card] = await ctx.sql<{ id: number }[]>`select id from sim_cards where device_id = ${byos.deviceId}`;
    const renumbered = randomNumber();
    const claim = await ctx.request("PATCH", `/api/byos/devices/${byos.deviceId}/sims/${card!.id}`, { token: t.token, body: { phone_number: renumbered } });
    expect((await verificationSms(ctx, claim.body.data.verification_code, renumbered)).status).toBe(200);
    // The number renumbered in place: the same hosted SIM, now the new number.
    expect((await ctx.sql`select number from hosted_sims where id = ${byos.hostedSimId}`)[0]!.number).toBe(renumbered);
    const failed = await settled(t.token, id, "failed");
    expect(failed.error).toContain("no longer serves its number");
    expect(await used()).toBe(0);
    expect((await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/heartbeat`, { token: t.token, body: {} })).status).toBe(200);
    expect((await ctx.sql`select dispatched_at from messages where id = ${id}`)[0]!.dispatched_at).toBeNull();
    expect(events.some((e) => e.event === "message.send" && (e.data as any).message.id === id)).toBe(false);
  });

  test("a report on a send not yet handed to the phone is refused with 409 invalid_state; it still waits and can be cancelled", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const byos = await createByosNumber(ctx.sql, t.org.id);
    await unpaced(ctx.sql, t.org.id);
    const id = (await send(t.token, { hosted_sim: byos.hostedSimId, to: randomNumber(), text: "waits for the pacer" })).body.data.id;
    const res = await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/messages/${id}/status`, { token: t.token, body: { status: "sending" } });
    expect(res.status).toBe(409);
    expectErrorShape(res.body, "invalid_state");
    expect((await ctx.sql`select status, attempts, dispatched_at from messages where id = ${id}`)[0]).toEqual({
      status: "queued",
      attempts: 0,
      dispatched_at: null,
    });
    expect((await ctx.request("POST", `/api/messages/${id}/cancel`, { token: t.token })).body.data.status).toBe("cancelled");
  });

  test.skipIf(!process.env.DATABASE_URL)(
    "a cancel racing the pacer (the cancel holds its send, the pacer refunds an expired one first) ends without a deadlock",
    async () => {
      const t = await createTenant(ctx.sql, { plan: "pro" });
      const byos = await createByosNumber(ctx.sql, t.org.id);
      await unpaced(ctx.sql, t.org.id);
      const post = async (body: Record<string, unknown>) =>
        (await send(t.token, { hosted_sim: byos.hostedSimId, to: randomNumber(), ...body })).body.data.id as number;
      const expiring = await post({ text: "expires while the phone is away", expires_at: new Date(Date.now() + 1500).toISOString() });
      // Its expiry left to the pacer (its own timeout job would expire it first).
      await ctx.sql`delete from jobs where queue = 'message.outbound.device-timeout' and (payload->>'message_id')::bigint = ${expiring}`;
      const held = await post({ text: "cancelled while the pacer runs" });
      await eventually(async () => Date.now() > Date.parse((await show(t.token, expiring)).expires_at) + 100);
      await ctx.sql`update devices set is_online = true, last_seen_at = now() where id = ${byos.deviceId}`;
      // The cancel's order (cancelMessage): its message row, then the organization's usage row (the refund).
      let go!: () => void;
      const gate = new Promise<void>((r) => (go = r));
      const cancel = ctx.sql.begin(async (tx) => {
        await tx`select 1 from messages where id = ${held} for update`;
        await gate;
        return moveStatus(tx, held, "cancelled", CANCELLABLE);
      });
      await eventually(async () => (await ctx.sql`select 1 from pg_locks where locktype = 'transactionid' and granted`).length > 0);
      const deps = { sql: ctx.sql, jobs: ctx.services.jobs, events: ctx.services.events, deviceTimeoutSeconds: 300 };
      const pace = paceSims(deps, [byos.hostedSimId]);
      await lockWaiters(ctx.sql, 1);
      go();
      expect(await Promise.all([cancel, pace])).toEqual([true, undefined]);
      expect((await ctx.sql`select id, status from messages where id = any(${[expiring, held]}::bigint[]) order by id`).map((r) => r.status)).toEqual([
        "expired",
        "cancelled",
      ]);
    },
    30_000,
  );

  test("sends that waited while the phone was disabled go when it is enabled again, though it stayed online", async () => {
    const t = await createTenant(ctx.sql, { plan: "pro" });
    const byos = await createByosNumber(ctx.sql, t.org.id, { online: true });
    // Two seconds between sends: the second waits for its slot.
    await ctx.sql`
      insert into sending_policies (organization_id, messages_per_minute, min_delay_ms, max_delay_ms, daily_cap, time_zone)
      values (${t.org.id}, 600, 2000, 2000, 100000, 'UTC')`;
    const ids: number[] = [];
    for (const text of ["first", "second"]) ids.push((await send(t.token, { hosted_sim: byos.hostedSimId, to: randomNumber(), text })).body.data.id);
    const handed = (id: number) => events.some((e) => e.event === "message.send" && (e.data as any).message.id === id);
    await eventually(() => handed(ids[0]!), 5_000, "the first send handed over");
    expect((await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/disable`, { token: t.token })).status).toBe(200);
    // The second's slot passes while the phone is disabled: its pace run finds it not ready.
    await eventually(
      async () =>
        (await ctx.sql`select 1 from jobs where queue = 'message.outbound.pace' and not dead and (payload->>'hosted_sim_id')::bigint = ${byos.hostedSimId}`)
          .length === 0,
      10_000,
      "the pace run done",
    );
    expect(handed(ids[1]!)).toBe(false);
    expect((await ctx.request("POST", `/api/byos/devices/${byos.deviceId}/enable`, { token: t.token })).status).toBe(200);
    await eventually(() => handed(ids[1]!), 10_000, "the second send handed over after the enable");
  }, 30_000);

  test("a disabled device refuses sending with 409 invalid_state", async () => {
    const t = await createTenant(ctx.sql);
    const byos = await createByosNumber(ctx.sql, t.org.id, { deviceStatus: "disabled" });
    const res = await send(t.token, { hosted_sim: byos.hostedSimId, to: "+15557770004", text: "x" });
    expect(res.status).toBe(409);
    expectErrorShape(res.body, "invalid_state");
  });
});

describe("POST /api/messages rules", () => {
  test("quota: concurrent sends at the last unit never go over the plan (402 plan_limit_reached)", async () => {
    const t = await createTenant(ctx.sql, { plan: "free" });
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    await useQuota(ctx.sql, t.org.id, sim, 98);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => send(t.token, { hosted_sim: sim.id, to: "+15550009999", text: `race ${i}` })));
    expect(results.map((r) => r.status).sort()).toEqual([202, 202, 402, 402, 402, 402]);
    for (const r of results.filter((x) => x.status === 402)) expectErrorShape(r.body, "plan_limit_reached");
    const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from messages where organization_id = ${t.org.id} and direction = 'outbound'`;
    expect(row!.n).toBe(100);
  });

  test("a number locked by another organization refuses with 409 number_locked; the holder's send is marked locked", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const lock = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token });
    const refused = await send(b.token, { hosted_sim: sim.id, to: "+15550001000", text: "x" });
    expect(refused.status).toBe(409);
    expectErrorShape(refused.body, "number_locked");
    expect(refused.body.locked_until).toBe(lock.body.data.lock.locked_until);
    const ok = await send(a.token, { hosted_sim: sim.id, to: "+15550001000", text: "mine" });
    expect(ok.status).toBe(202);
    expect(ok.body.data.locked).toBe(true);
    // Outbound messages are the sender's alone.
    expect((await ctx.request("GET", `/api/messages/${ok.body.data.id}`, { token: b.token })).status).toBe(404);
  });

  test("a send due while another organization holds the number's lock waits for the lock's end; one due on a deactivated number fails, its unit given back", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const to = randomNumber();
    const soon = () => new Date(Date.now() + 1_000).toISOString();
    const id = (await send(a.token, { hosted_sim: sim.id, to, text: "due under B's lock", send_at: soon() })).body.data.id;
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: b.token })).status).toBe(200);
    // A short lock: its end is what the waiting send is due at.
    const lockEnd = Date.now() + 3_000;
    await ctx.sql`update hosted_sims set locked_until = ${new Date(lockEnd)} where id = ${sim.id}`;
    const sent = await settled(a.token, id, "sent");
    expect(Date.parse(sent.sent_at)).toBeGreaterThanOrEqual(lockEnd);
    expect(received.filter((r) => r.to === to).length).toBe(1);

    const used = async () => (await ctx.request("GET", "/api/usage", { token: a.token })).body.data.monthly_messages.used;
    const before = await used();
    const later = (await send(a.token, { hosted_sim: sim.id, to, text: "due on a deactivated number", send_at: soon() })).body.data.id;
    expect(await used()).toBe(before + 1);
    await ctx.sql`update hosted_sims set status = 'inactive' where id = ${sim.id}`;
    expect((await settled(a.token, later, "failed")).error).toContain("no longer sends");
    expect(await used()).toBe(before);
    expect(received.filter((r) => r.to === to).length).toBe(1);
  }, 30_000);

  test("a sender pool leaves out a number another organization has locked; all of them locked: 409 number_locked", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const locked = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const free = await createSharedNumber(ctx.sql, [a.org.id]);
    expect((await ctx.request("POST", `/api/numbers/${locked.id}/lock`, { token: b.token })).status).toBe(200);
    const one = await send(a.token, { hosted_sims: [locked.id, free.id], to: randomNumber(), text: "x" });
    expect(one.status).toBe(202);
    expect(one.body.data.hosted_sim_id).toBe(free.id);
    const bulk = await send(a.token, { hosted_sims: [locked.id, free.id], to: [randomNumber(), randomNumber()], text: "x" });
    expect(bulk.status).toBe(202);
    const refused = await send(a.token, { hosted_sims: [locked.id], to: randomNumber(), text: "x" });
    expect(refused.status).toBe(409);
    expectErrorShape(refused.body, "number_locked");
  });

  test("validation: E.164 recipient, text 1..1600, hosted_sim required", async () => {
    const t = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [t.org.id]);
    for (const body of [
      { hosted_sim: sim.id, to: "5551234", text: "x" },
      { hosted_sim: sim.id, to: "+15551234567", text: "" },
      { hosted_sim: sim.id, to: "+15551234567", text: "x".repeat(1601) },
      { to: "+15551234567", text: "x" },
      { hosted_sim: "1", to: "+15551234567", text: "x" },
    ]) {
      const res = await send(t.token, body);
      expect(res.status).toBe(422);
      expectErrorShape(res.body, "validation_failed");
    }
    expect((await send(t.token, { hosted_sim: sim.id, to: "+15551234567", text: "x".repeat(1600) })).status).toBe(202);
    // `to` is a number or a list of them (SPEC.md 4.2: a string): each is told what was wrong with it.
    const why = async (to: unknown) => (await send(t.token, { hosted_sim: sim.id, to, text: "x" })).body.errors.to;
    expect(await why("abc")).toEqual(["must be an E.164 phone number"]);
    expect(await why("+1555")).toEqual(["must be an E.164 phone number"]);
    expect(await why(15551234567)).toEqual(["must be a string or an array"]);
    expect(await why([])).toEqual(["must hold 1 to 1000 recipients"]);
  });
});
