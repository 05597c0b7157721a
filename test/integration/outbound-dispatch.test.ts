import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createFakeClock, type FakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { clockedContext } from "../fixtures-devices";
import { createByosNumber, createSharedNumber, randomNumber, useQuota } from "../fixtures-numbers";
import { createTestContext, expectErrorShape, type TestContext } from "../helpers";

/**
 * The batched outbound paths (issue 19 performance): scheduled sends due together are queued and
 * handed to their phones in a few transactions, not one or two per send; acceptance checks the
 * quota and stores in one statement, all or none, under concurrency. Real database, fake clock
 * for the dispatch.
 */
const START = Date.parse("2027-04-06T09:00:00.000Z");
let base: TestContext;
beforeAll(async () => {
  base = await createTestContext();
}, 60_000);
afterAll(async () => {
  await base.close();
});

async function settle(clock: FakeClock) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [due] = await base.sql<{ n: number }[]>`
      select count(*)::int as n from jobs where not dead and queue like 'message.outbound.%' and run_at <= ${new Date(clock.now())}`;
    if (due!.n === 0) return;
    if (Date.now() > deadline) throw new Error("timed out waiting for the due outbound jobs to run");
    await Bun.sleep(2);
  }
}

/** The transaction (txid) of each event of `type` about the messages, by message id. */
async function txidsOf(type: string, ids: number[]) {
  const rows = await base.sql<{ id: number; txid: string }[]>`
    select (payload->'message'->>'id')::bigint as id, txid::text as txid from events
    where type = ${type} and (payload->'message'->>'id')::bigint = any(${ids}::bigint[])`;
  return new Map(rows.map((r) => [r.id, r.txid]));
}

describe("scheduled sends due together", () => {
  test("300 sends on 3 SIMs due at one instant: queued in one transaction, each SIM's first handed over in that same transaction, the rest paced, none twice", async () => {
    const clock = createFakeClock(START);
    const c = await clockedContext(base, clock, { OUTBOUND_DEVICE_TIMEOUT_SECONDS: 864_000, EVENT_RETENTION_DAYS: 36_500 } as never);
    c.services.start();
    try {
      const t = await createTenant(base.sql, { plan: "enterprise" });
      const sims = await Promise.all([0, 1, 2].map(() => createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) })));
      const policy = { messages_per_minute: 60, min_delay_seconds: 0, max_delay_seconds: 0, daily_cap: 1000 };
      expect((await c.request("PUT", "/api/sending-policy", { token: t.token, body: policy })).status).toBe(200);
      const sendAt = START + 30_000;
      const ids: number[] = [];
      for (const sim of sims) {
        const to = Array.from({ length: 100 }, () => randomNumber());
        const res = await c.request("POST", "/api/messages", {
          token: t.token,
          body: { hosted_sim: sim.hostedSimId, to, text: "due together", send_at: new Date(sendAt).toISOString() },
        });
        expect(res.status).toBe(202);
        ids.push(...res.body.data.messages.map((m: { id: number }) => m.id));
      }
      await settle(clock);
      const statusCounts = async () =>
        Object.fromEntries(
          (
            await base.sql<{ status: string; n: number }[]>`
              select status, count(*)::int as n from messages where id = any(${ids}::bigint[]) group by status`
          ).map((r) => [r.status, r.n]),
        );
      expect(await statusCounts()).toEqual({ scheduled: 300 });

      clock.set(sendAt);
      c.services.jobs.wake();
      await settle(clock);
      expect(await statusCounts()).toEqual({ queued: 300 });
      const queuedIn = await txidsOf("message.queued", ids);
      expect(queuedIn.size).toBe(300);
      expect(new Set(queuedIn.values()).size).toBe(1);
      // Each SIM's oldest goes at send_at, in the commit that queued it; the others wait for their slots.
      const first = await base.sql<{ id: number; at: Date }[]>`
        select id, dispatched_at as at from messages where id = any(${ids}::bigint[]) and dispatched_at is not null`;
      expect(first).toHaveLength(3);
      const sentIn = await txidsOf("message.send", ids);
      for (const m of first) {
        expect(m.at.getTime()).toBe(sendAt);
        expect(sentIn.get(m.id)).toBe(queuedIn.get(m.id)!);
      }

      // The rest at 1 a second per SIM, driven from one pace job to the next.
      for (;;) {
        const [next] = await base.sql<{ at: Date | null }[]>`
          select min(run_at) as at from jobs where queue = 'message.outbound.pace' and not dead
            and (payload->>'hosted_sim_id')::bigint = any(${sims.map((s) => s.hostedSimId)}::bigint[])`;
        if (!next?.at) break;
        if (next.at.getTime() > clock.now()) clock.set(next.at.getTime());
        c.services.jobs.wake();
        await settle(clock);
      }
      const out = await base.sql<{ id: number; sim: number; at: Date }[]>`
        select id, hosted_sim_id as sim, dispatched_at as at from messages where id = any(${ids}::bigint[]) and dispatched_at is not null
        order by hosted_sim_id, dispatched_at, id`;
      expect(out).toHaveLength(300);
      const sends = await txidsOf("message.send", ids);
      expect(sends.size).toBe(300);
      const [orders] = await base.sql<{ n: number }[]>`
        select count(*)::int as n from events where type = 'message.send' and (payload->'message'->>'id')::bigint = any(${ids}::bigint[])`;
      expect(orders!.n).toBe(300);
      for (let i = 1; i < out.length; i++) {
        if (out[i]!.sim !== out[i - 1]!.sim) continue;
        expect(out[i]!.at.getTime() - out[i - 1]!.at.getTime()).toBe(1000);
        // Oldest first within a SIM.
        expect(out[i]!.id).toBeGreaterThan(out[i - 1]!.id);
      }
    } finally {
      await c.close();
    }
  }, 120_000);
});

describe("acceptance in one statement", () => {
  test("concurrent bulk sends at the quota: each all or none, never over it; history seqs stay one dense range", async () => {
    const t = await createTenant(base.sql, { plan: "free" });
    const sim = await createSharedNumber(base.sql, [t.org.id]);
    await useQuota(base.sql, t.org.id, sim, 80);
    const bulk = (i: number) => ({
      hosted_sim: sim.id,
      to: Array.from({ length: 5 }, () => randomNumber()),
      text: `bulk ${i}`,
      send_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => base.request("POST", "/api/messages", { token: t.token, body: bulk(i) })));
    expect(results.map((r) => r.status).sort()).toEqual([202, 202, 202, 202, 402, 402]);
    for (const r of results.filter((x) => x.status === 402)) {
      expectErrorShape(r.body, "plan_limit_reached");
      expect(r.body.message).toContain("0 of its 100");
    }
    const [count] = await base.sql<{ n: number; batches: number }[]>`
      select count(*)::int as n, count(distinct batch_id)::int as batches from messages where organization_id = ${t.org.id} and direction = 'outbound'`;
    expect(count).toEqual({ n: 100, batches: 4 });
    for (const r of results.filter((x) => x.status === 202)) expect(r.body.data.messages).toHaveLength(5);
    // The sends' visibility rows got their seqs as ranges: every seq once, 1..total, as a page needs (the 80 filled in directly have none).
    const [seqs] = await base.sql<{ n: number; distinct_seqs: number; max: number }[]>`
      select count(*)::int as n, count(distinct seq)::int as distinct_seqs, max(seq)::int as max from message_visibility
      where organization_id = ${t.org.id} and hosted_sim_id = ${sim.id}`;
    expect(seqs).toEqual({ n: 20, distinct_seqs: 20, max: 20 });
    const page = await base.request("GET", `/api/messages?hosted_sim=${sim.id}&per_page=10`, { token: t.token });
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(10);
  }, 60_000);
});
