import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { providerSignature } from "../../server/provider/signature";
import type { Delivery as BusMessage } from "../../server/realtime/hub";
import { createTenant } from "../fixtures";
import { attachNumber, createSharedNumber, createTeam, eventually, receiveSms } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";

/**
 * Who sees which inbound SMS (API.md "Lock meaning"): history, single reads and events of each
 * organization contain exactly the messages stamped for it at arrival. This file runs its own
 * context with the job queue started, so the fan-out job really publishes the events.
 */
let ctx: TestContext;
const events: BusMessage[] = [];
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.realtime.watch((m) => events.push(m));
  ctx.services.start();
}, 60_000);
afterAll(() => ctx.close());

type Tenant = Awaited<ReturnType<typeof createTenant>>;

async function historyTexts(t: Tenant, simId: number): Promise<string[]> {
  const res = await ctx.request("GET", `/api/messages?hosted_sim=${simId}&per_page=100`, { token: t.token });
  expect(res.status).toBe(200);
  return res.body.data.map((m: { text: string }) => m.text).reverse();
}

async function canRead(t: Tenant, messageId: number) {
  const res = await ctx.request("GET", `/api/messages/${messageId}`, { token: t.token });
  if (res.status === 200) return true;
  expect(res.status).toBe(404);
  return false;
}

/** Organizations a message.received event for the message reached, by organization channel and number-channel limit. */
async function receivedBy(messageId: number, simId: number) {
  return eventually(
    () => {
      const mine = events.filter((e) => e.event === "message.received" && (e.data as any).message.id === messageId);
      // One publish per organization (each with its team of the message: docs/events.md "A message's team").
      const numbers = mine.filter((e) => e.channel === `private-number.${simId}`);
      const orgChannels = mine
        .filter((e) => e.channel.startsWith("private-organization."))
        .map((e) => Number(e.channel.split(".")[1]))
        .sort();
      if (numbers.length === 0 || numbers.length < orgChannels.length) return null;
      return { orgChannels, numberLimit: numbers.flatMap((e) => e.organizations ?? []).sort() };
    },
    10_000,
    `message.received for ${messageId}`,
  );
}

async function lock(t: Tenant, simId: number, teamId?: number) {
  const res = await ctx.request("POST", `/api/numbers/${simId}/lock`, { token: t.token, body: teamId ? { team_id: teamId } : {} });
  expect(res.status).toBe(200);
}

async function runOutLock(simId: number) {
  await ctx.sql`update hosted_sims set locked_until = date_trunc('milliseconds', now() - interval '1 second') where id = ${simId}`;
}

const sorted = (ids: number[]) => [...ids].sort();

describe("visibility matrix", () => {
  test("two organizations: unlocked both see it; A's lock hides it from B for good; after expiry both again", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);

    const m1 = await receiveSms(ctx.sql, sim.id, { text: "m1 open" });
    await lock(a, sim.id);
    const m2 = await receiveSms(ctx.sql, sim.id, { text: "m2 during A's lock" });
    await runOutLock(sim.id);
    const m3 = await receiveSms(ctx.sql, sim.id, { text: "m3 after expiry" });

    expect(await historyTexts(a, sim.id)).toEqual(["m1 open", "m2 during A's lock", "m3 after expiry"]);
    expect(await historyTexts(b, sim.id)).toEqual(["m1 open", "m3 after expiry"]);
    expect([await canRead(a, m2.messageId), await canRead(b, m2.messageId)]).toEqual([true, false]);
    expect([await canRead(a, m1.messageId), await canRead(b, m1.messageId)]).toEqual([true, true]);

    expect(await receivedBy(m1.messageId, sim.id)).toEqual({ orgChannels: sorted([a.org.id, b.org.id]), numberLimit: sorted([a.org.id, b.org.id]) });
    expect(await receivedBy(m2.messageId, sim.id)).toEqual({ orgChannels: [a.org.id], numberLimit: [a.org.id] });
    expect(await receivedBy(m3.messageId, sim.id)).toEqual({ orgChannels: sorted([a.org.id, b.org.id]), numberLimit: sorted([a.org.id, b.org.id]) });

    // Unlocking later does not reveal what arrived under the lock.
    expect(await historyTexts(b, sim.id)).not.toContain("m2 during A's lock");
    const counts = await Promise.all(
      [a, b].map(async (t) => (await ctx.request("GET", `/api/numbers/${sim.id}`, { token: t.token })).body.data.messages_received_count),
    );
    expect(counts).toEqual([3, 2]);
  });

  test("three organizations, locks passing from A to C, a late joiner and the lock holder's team", async () => {
    const [a, b, c, late] = [await createTenant(ctx.sql), await createTenant(ctx.sql), await createTenant(ctx.sql), await createTenant(ctx.sql)];
    const teamC = await createTeam(ctx.sql, c.org.id);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id, c.org.id]);

    const m1 = await receiveSms(ctx.sql, sim.id, { text: "m1 all three" });
    await lock(a, sim.id);
    const m2 = await receiveSms(ctx.sql, sim.id, { text: "m2 A only" });
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: a.token })).status).toBe(200);
    await lock(c, sim.id, teamC.id);
    const m3 = await receiveSms(ctx.sql, sim.id, { text: "m3 C only" });
    await runOutLock(sim.id);
    await attachNumber(ctx.sql, sim.id, late.org.id);
    const m4 = await receiveSms(ctx.sql, sim.id, { text: "m4 all four" });

    expect(await historyTexts(a, sim.id)).toEqual(["m1 all three", "m2 A only", "m4 all four"]);
    expect(await historyTexts(b, sim.id)).toEqual(["m1 all three", "m4 all four"]);
    expect(await historyTexts(c, sim.id)).toEqual(["m1 all three", "m3 C only", "m4 all four"]);
    // An organization that joins later does not see older messages.
    expect(await historyTexts(late, sim.id)).toEqual(["m4 all four"]);
    expect(await canRead(late, m1.messageId)).toBe(false);

    const seenByC = (await ctx.request("GET", `/api/messages/${m3.messageId}`, { token: c.token })).body.data;
    expect(seenByC).toMatchObject({ direction: "inbound", status: "received", locked: true, team_id: teamC.id, source: "provider" });
    expect(await receivedBy(m2.messageId, sim.id)).toEqual({ orgChannels: [a.org.id], numberLimit: [a.org.id] });
    expect(await receivedBy(m3.messageId, sim.id)).toEqual({ orgChannels: [c.org.id], numberLimit: [c.org.id] });
    expect((await receivedBy(m4.messageId, sim.id)).numberLimit).toEqual(sorted([a.org.id, b.org.id, c.org.id, late.org.id]));
    expect(events.some((e) => e.event === "message.received" && e.channel === `private-team.${teamC.id}` && (e.data as any).message.id === m3.messageId)).toBe(
      true,
    );
  });

  test("an organization that leaves stops seeing new messages", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const before = await receiveSms(ctx.sql, sim.id, { text: "before" });
    await ctx.sql`delete from hosted_sim_organizations where hosted_sim_id = ${sim.id} and organization_id = ${b.org.id}`;
    const after = await receiveSms(ctx.sql, sim.id, { text: "after" });
    expect(await canRead(b, before.messageId)).toBe(true);
    expect(await canRead(b, after.messageId)).toBe(false);
    // The history of a number it no longer has is 404, like any number that is not its own.
    expect((await ctx.request("GET", `/api/messages?hosted_sim=${sim.id}`, { token: b.token })).status).toBe(404);
  });

  test("an SMS the provider posts to a pool number follows the same rules (callback of API.md)", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const post = async (text: string) => {
      const form = { From: "+15550002222", To: sim.number, Body: text, MessageSid: `SM${crypto.randomUUID().replaceAll("-", "")}`, AccountSid: "AC1" };
      const signature = providerSignature(ctx.config.PROVIDER_AUTH_TOKEN, `${ctx.config.PUBLIC_URL}/api/provider/sms`, form);
      const res = await ctx.request("POST", "/api/provider/sms", { form, headers: { "x-provider-signature": signature } });
      expect(res.status).toBe(200);
    };
    await post("provider open");
    await lock(b, sim.id);
    await post("provider during B's lock");
    expect(await historyTexts(a, sim.id)).toEqual(["provider open"]);
    expect(await historyTexts(b, sim.id)).toEqual(["provider open", "provider during B's lock"]);
  });

  // Visibility rows reach their number through their message (migrations/0250): a number's
  // deletion removes its messages and, with them, every organization's rows; no row may name
  // a number its message does not.
  test("a number's deletion takes its messages' visibility rows with it, in every organization", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const m = await receiveSms(ctx.sql, sim.id, { text: "soon gone" });
    const rows = async () =>
      (await ctx.sql<{ n: number }[]>`select count(*)::int as n from message_visibility where message_id = ${m.messageId} or hosted_sim_id = ${sim.id}`)[0]!.n;
    expect(await rows()).toBe(2);
    const [mismatched] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from message_visibility v join messages m on m.id = v.message_id where v.hosted_sim_id <> m.hosted_sim_id`;
    expect(mismatched!.n).toBe(0);
    await ctx.sql`delete from hosted_sims where id = ${sim.id}`;
    expect(await rows()).toBe(0);
    expect((await ctx.sql`select 1 from messages where id = ${m.messageId}`).length).toBe(0);
  });

  // Migration 0260: statement triggers in place of the keys' cascades.
  test("an organization deleted by hand takes its visibility rows and events with it; the other organization keeps its own", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const m = await receiveSms(ctx.sql, sim.id, { text: "seen by two" });
    const left = async (orgId: number) =>
      (
        await ctx.sql<{ visible: number; events: number }[]>`
          select (select count(*)::int from message_visibility where organization_id = ${orgId}) as visible,
                 (select count(*)::int from events where organization_id = ${orgId}) as events`
      )[0]!;
    expect(await left(a.org.id)).toMatchObject({ visible: 1 });
    expect((await left(a.org.id)).events).toBeGreaterThan(0);
    const before = await left(b.org.id);
    await ctx.sql`delete from organizations where id = ${a.org.id}`;
    expect(await left(a.org.id)).toEqual({ visible: 0, events: 0 });
    expect(await left(b.org.id)).toEqual(before);
    expect((await ctx.sql`select 1 from messages where id = ${m.messageId}`).length).toBe(1);
  });

  test("a message deleted by hand takes its visibility rows with it, in every organization", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const gone = await receiveSms(ctx.sql, sim.id, { text: "soon gone" });
    const kept = await receiveSms(ctx.sql, sim.id, { text: "kept" });
    await ctx.sql`delete from messages where id = ${gone.messageId}`;
    const rows = await ctx.sql<{ message_id: number }[]>`select message_id from message_visibility where hosted_sim_id = ${sim.id}`;
    expect(rows.map((r) => Number(r.message_id))).toEqual([kept.messageId, kept.messageId]);
    expect(await historyTexts(a, sim.id)).toEqual(["kept"]);
  });
});
