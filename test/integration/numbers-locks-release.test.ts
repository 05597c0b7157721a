import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storeInboundMessages } from "../../server/messages/inbound";
import { lockHistory } from "../../server/numbers/lock-store";
import { expireLock } from "../../server/numbers/locks";
import type { Delivery as BusMessage } from "../../server/realtime/hub";
import { createApiKey, createTenant } from "../fixtures";
import { logRows } from "../fixtures-events";
import { createSharedNumber, eventually, receiveSms } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/**
 * Issue 17 item 3: locks that behave like activations. `release_on_message` ends a lock with the
 * first inbound message under it (from `sender` if set); that message stays the holder's, the
 * next one is every attached organization's again. The job queue runs, so the fan-out really
 * announces the release.
 */
let ctx: TestContext;
const events: BusMessage[] = [];
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.realtime.watch((m) => events.push(m));
  ctx.services.start();
}, 60_000);
afterAll(() => ctx.close());

const lock = (token: string, simId: number, body: Record<string, unknown>) => ctx.request("POST", `/api/numbers/${simId}/lock`, { token, body });
const canRead = async (token: string, messageId: number) => (await ctx.request("GET", `/api/messages/${messageId}`, { token })).status === 200;
const unlockedEvents = (simId: number) => events.filter((e) => e.event === "number.unlocked" && (e.data as { hosted_sim_id: number }).hosted_sim_id === simId);

async function sharedPair() {
  const a = await createTenant(ctx.sql);
  const b = await createTenant(ctx.sql);
  const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
  return { a, b, sim };
}

describe("release_on_message", () => {
  test("the first SMS under the lock ends it: that SMS is the holder's alone, the next is both organizations'; number.unlocked says why", async () => {
    const { a, b, sim } = await sharedPair();
    const res = await lock(a.token, sim.id, { release_on_message: true, duration_seconds: 600 });
    expect(res.status).toBe(200);
    expect(res.body.data.lock).toMatchObject({ organization_id: a.org.id, release_on_message: true, sender: null });
    const lockedUntil = res.body.data.lock.locked_until as string;

    const first = await receiveSms(ctx.sql, sim.id);
    expect(first.locked).toBe(true);
    expect(first.visibility.map((v) => v.organizationId)).toEqual([a.org.id]);
    expect(await canRead(a.token, first.messageId)).toBe(true);
    expect(await canRead(b.token, first.messageId)).toBe(false);
    for (const token of [a.token, b.token]) {
      expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token })).body.data).toMatchObject({ locked: false, lock: null });
    }
    const history = await lockHistory(ctx.sql, sim.id);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ release_reason: "released_on_message", released_by_message_id: first.messageId, release_on_message: true });
    expect(history[0]!.released_at).not.toBeNull();

    const next = await receiveSms(ctx.sql, sim.id);
    expect(next.locked).toBe(false);
    expect(next.visibility.map((v) => v.organizationId).sort()).toEqual([a.org.id, b.org.id].sort());
    expect(await canRead(b.token, next.messageId)).toBe(true);
    expect((await ctx.request("GET", `/api/messages/${next.messageId}`, { token: a.token })).body.data.locked).toBe(false);

    // Announced once the fan-out ran: one row per attached organization, each on the number's
    // channel (limited to that organization) and that organization's channel.
    const channels = await eventually(() => {
      const found = unlockedEvents(sim.id);
      return found.length >= 4 && found;
    });
    expect(channels.every((e) => (e.data as { reason: string }).reason === "released_on_message")).toBe(true);
    expect(channels.map((e) => `${e.channel}#${e.organizations}`).sort()).toEqual(
      [
        `private-number.${sim.id}#${a.org.id}`,
        `private-number.${sim.id}#${b.org.id}`,
        `private-organization.${a.org.id}#${a.org.id}`,
        `private-organization.${b.org.id}#${b.org.id}`,
      ].sort(),
    );
    for (const org of [a.org.id, b.org.id]) {
      const rows = (await logRows(ctx.services, [org], "number.unlocked")).filter((r) => r.hostedSimId === sim.id);
      expect(rows.map((r) => r.payload.reason)).toEqual(["released_on_message"]);
    }
    // number.unlocked comes after the releasing message's message.received.
    const receivedAt = events.findIndex((e) => e.event === "message.received" && (e.data as any).message.id === first.messageId);
    expect(receivedAt).toBeGreaterThanOrEqual(0);
    expect(events.indexOf(channels[0]!)).toBeGreaterThan(receivedAt);
    // The lock's expiry job later finds nothing to end.
    expect(await expireLock(ctx.services, { hosted_sim_id: sim.id, organization_id: a.org.id, locked_until: lockedUntil })).toBe("gone");
  });

  test("sender: an SMS from another sender does not release and is the holder's alone; the sender's (any letter case) does", async () => {
    const { a, b, sim } = await sharedPair();
    const res = await lock(a.token, sim.id, { release_on_message: true, sender: "Google" });
    expect(res.body.data.lock).toMatchObject({ release_on_message: true, sender: "Google" });

    const other = await receiveSms(ctx.sql, sim.id, { from: "+15550002222" });
    expect(other.locked).toBe(true);
    expect(await canRead(a.token, other.messageId)).toBe(true);
    expect(await canRead(b.token, other.messageId)).toBe(false);
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: a.token })).body.data.lock).toMatchObject({ sender: "Google" });

    const fromSender = await receiveSms(ctx.sql, sim.id, { from: "GOOGLE", text: "G-482913 is your Google verification code." });
    expect(fromSender.locked).toBe(true);
    expect(await canRead(b.token, fromSender.messageId)).toBe(false);
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: a.token })).body.data.locked).toBe(false);

    const after = await receiveSms(ctx.sql, sim.id, { from: "GOOGLE" });
    expect(after.locked).toBe(false);
    expect(await canRead(b.token, after.messageId)).toBe(true);
  });

  test("a lock without release_on_message still covers every message", async () => {
    const { a, b, sim } = await sharedPair();
    await lock(a.token, sim.id, {});
    for (let i = 0; i < 2; i++) {
      const m = await receiveSms(ctx.sql, sim.id);
      expect(m.locked).toBe(true);
      expect(await canRead(b.token, m.messageId)).toBe(false);
    }
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: a.token })).body.data.lock).toMatchObject({ release_on_message: false, sender: null });
  });

  test("a batch is stored in order: the lock covers its messages up to and including the releasing one", async () => {
    const { a, b, sim } = await sharedPair();
    await lock(a.token, sim.id, { release_on_message: true, sender: "+15550003333" });
    const input = (from: string) => ({ hostedSimId: sim.id, from, text: `hi ${from}`, source: "device" as const, receivedAt: new Date() });
    const stored = await ctx.sql.begin((tx) =>
      storeInboundMessages(tx, [input("+15550009999"), input("+15550003333"), input("+15550003333"), input("+15550009999")]),
    );
    expect(stored.map((s) => s!.locked)).toEqual([true, true, false, false]);
    expect(stored.map((s) => s!.visibility.length)).toEqual([1, 1, 2, 2]);
    const history = await lockHistory(ctx.sql, sim.id);
    expect(history.map((h) => [h.release_reason, h.released_by_message_id])).toEqual([["released_on_message", stored[1]!.messageId]]);
    expect(await canRead(b.token, stored[2]!.messageId)).toBe(true);
    expect(await canRead(b.token, stored[1]!.messageId)).toBe(false);
  });

  test("race: of SMS arriving at the same moment in separate transactions, exactly one is under the lock and releases it", async () => {
    const { a, sim } = await sharedPair();
    await lock(a.token, sim.id, { release_on_message: true });
    const stored = await Promise.all(Array.from({ length: 6 }, () => receiveSms(ctx.sql, sim.id)));
    expect(stored.filter((s) => s.locked)).toHaveLength(1);
    const history = await lockHistory(ctx.sql, sim.id);
    expect(history.map((h) => [h.release_reason, h.released_by_message_id])).toEqual([["released_on_message", stored.find((s) => s.locked)!.messageId]]);
  });
  // Forwarding of the releasing message: test/integration/webhooks-forwarding.test.ts.
});

describe("lock options: validation and extension", () => {
  test("422 for a wrong type, a sender without release_on_message: true, or a sender that is no SMS sender", async () => {
    const { a, sim } = await sharedPair();
    const refused: Record<string, unknown>[] = [
      { release_on_message: "yes" },
      { sender: "+15550001111" },
      { release_on_message: false, sender: "+15550001111" },
      { release_on_message: true, sender: "+123" },
      { release_on_message: true, sender: "ABCDEFGHIJKL" },
      { release_on_message: true, sender: "Goo!gle" },
      { release_on_message: true, sender: "" },
      { release_on_message: true, sender: 15550001111 },
    ];
    for (const body of refused) {
      const res = await lock(a.token, sim.id, body);
      expect(res.status).toBe(422);
      const err = expectErrorShape(res.body, "validation_failed");
      expect(Object.keys(err.errors)).toEqual([Object.keys(body).at(-1) === "sender" ? "sender" : "release_on_message"]);
    }
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: a.token })).body.data.locked).toBe(false);
    for (const sender of ["+15550001111", "Google", "22000", "AMAZON.COM", "My Bank"]) {
      const res = await lock(a.token, sim.id, { release_on_message: true, sender });
      expect(res.status).toBe(200);
      expect(res.body.data.lock.sender).toBe(sender);
    }
    // null is "absent": a plain lock's options.
    const plain = await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: a.token });
    expect(plain.status).toBe(200);
    const nulls = await lock(a.token, sim.id, { release_on_message: null, sender: null });
    expect(nulls.status).toBe(200);
    expect(nulls.body.data.lock).toMatchObject({ release_on_message: false, sender: null });
  });

  test("extending keeps the options unless release_on_message is given; number.locked carries them; API keys with numbers.lock may set them", async () => {
    const { a, b, sim } = await sharedPair();
    const key = await createApiKey(ctx.sql, a.org.id, ["numbers.lock"]);
    const first = await lock(key.key, sim.id, { release_on_message: true, sender: "Google" });
    expect(first.status).toBe(200);
    const kept = await lock(a.token, sim.id, { duration_seconds: 3600 });
    expect(kept.body.data.lock).toMatchObject({ release_on_message: true, sender: "Google" });
    const changed = await lock(a.token, sim.id, { release_on_message: true });
    expect(changed.body.data.lock).toMatchObject({ release_on_message: true, sender: null });
    const off = await lock(a.token, sim.id, { release_on_message: false });
    expect(off.body.data.lock).toMatchObject({ release_on_message: false, sender: null });
    const history = await lockHistory(ctx.sql, sim.id);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ release_on_message: false, sender: null, released_at: null });

    const full = await eventually(() =>
      events.find(
        (e) =>
          e.event === "number.locked" &&
          e.channel === `private-organization.${a.org.id}` &&
          (e.data as any).hosted_sim_id === sim.id &&
          (e.data as any).lock?.sender === "Google",
      ),
    );
    expect((full.data as any).lock).toMatchObject({ release_on_message: true, sender: "Google" });
    const redacted = await eventually(() =>
      events.find((e) => e.event === "number.locked" && e.channel === `private-organization.${b.org.id}` && (e.data as any).hosted_sim_id === sim.id),
    );
    expect((redacted.data as any).lock).toBeNull();
    // What B sees of the number never names the options.
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: b.token })).body.data).toMatchObject({ locked: true, lock: null });
  });
});
