import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { linkProvenNumber } from "../../server/numbers/byos-store";
import { lockHistory } from "../../server/numbers/lock-store";
import { expireLock } from "../../server/numbers/locks";
import type { Delivery as BusMessage } from "../../server/realtime/hub";
import { createApiKey, createTenant } from "../fixtures";
import { createByosNumber, createSharedNumber, createTeam, eventually, holdLocks, lockWaiters, receiveSms } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
const events: BusMessage[] = [];
let unsubscribe = () => {};
beforeAll(async () => {
  ctx = await sharedTestContext();
  unsubscribe = ctx.services.realtime.watch((m) => events.push(m)) as () => void;
}, 60_000);
afterAll(() => unsubscribe());

const eventsFor = (hostedSimId: number, event: string) =>
  events.filter((e) => e.event === event && (e.data as { hosted_sim_id?: number }).hosted_sim_id === hostedSimId);

/** Moves a live lock's end into the past, as if its time had run out. */
async function runOut(hostedSimId: number) {
  await ctx.sql`update hosted_sims set locked_until = date_trunc('milliseconds', now() - interval '1 second') where id = ${hostedSimId}`;
  await ctx.sql`update number_locks set locked_until = date_trunc('milliseconds', now() - interval '1 second') where hosted_sim_id = ${hostedSimId} and released_at is null`;
}

describe("POST /api/numbers/{id}/lock and /unlock", () => {
  test("lock: the holder sees the full lock, others see locked: true only; 409 number_locked with locked_until", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const before = Date.now();
    const res = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { duration_seconds: 120, team_id: team.id } });
    expect(res.status).toBe(200);
    expect(res.body.data.locked).toBe(true);
    expect(res.body.data.lock).toMatchObject({ organization_id: a.org.id, team_id: team.id, user_id: a.user.id });
    const until = Date.parse(res.body.data.lock.locked_until);
    expect(until).toBeGreaterThanOrEqual(before + 119_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 121_000);

    const seenByB = await ctx.request("GET", `/api/numbers/${sim.id}`, { token: b.token });
    expect(seenByB.body.data.locked).toBe(true);
    expect(seenByB.body.data.lock).toBeNull();

    for (const path of ["lock", "unlock"]) {
      const refused = await ctx.request("POST", `/api/numbers/${sim.id}/${path}`, { token: b.token });
      expect(refused.status).toBe(409);
      expectErrorShape(refused.body, "number_locked");
      expect(refused.body.locked_until).toBe(res.body.data.lock.locked_until);
    }
  });

  test("events: number.locked in full to the holder only, redacted to the others; number.unlocked to all", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token });
    const locked = await eventually(() => {
      const found = eventsFor(sim.id, "number.locked");
      return found.length >= 4 && found;
    });
    const full = locked.filter((e) => (e.data as any).lock !== null);
    const redacted = locked.filter((e) => (e.data as any).lock === null);
    expect(full.map((e) => e.channel).sort()).toEqual([`private-number.${sim.id}`, `private-organization.${a.org.id}`].sort());
    expect(full.find((e) => e.channel.startsWith("private-number"))!.organizations).toEqual([a.org.id]);
    expect(redacted.map((e) => e.channel).sort()).toEqual([`private-number.${sim.id}`, `private-organization.${b.org.id}`].sort());
    expect(redacted.find((e) => e.channel.startsWith("private-number"))!.organizations).toEqual([b.org.id]);
    expect(JSON.stringify(redacted.map((e) => e.data))).not.toContain("locked_until");

    const unlocked = await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: a.token });
    expect(unlocked.status).toBe(200);
    expect(unlocked.body.data).toMatchObject({ locked: false, lock: null });
    // One event on the number's channel and one on each attached organization's.
    const channels = await eventually(() => {
      const found = eventsFor(sim.id, "number.unlocked").map((e) => e.channel);
      return found.length >= 3 && found;
    });
    expect(channels).toContain(`private-organization.${a.org.id}`);
    expect(channels).toContain(`private-organization.${b.org.id}`);
  });

  test("the same organization re-locking extends, never shortens; history keeps one row per lock", async () => {
    const a = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id]);
    const first = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { duration_seconds: 600 } });
    const shorter = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { duration_seconds: 60 } });
    expect(shorter.body.data.lock.locked_until).toBe(first.body.data.lock.locked_until);
    const longer = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { duration_seconds: 3600 } });
    expect(Date.parse(longer.body.data.lock.locked_until)).toBeGreaterThan(Date.parse(first.body.data.lock.locked_until));
    let history = await lockHistory(ctx.sql, sim.id);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ organization_id: a.org.id, locked_until: longer.body.data.lock.locked_until, released_at: null });

    await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: a.token });
    await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token });
    history = await lockHistory(ctx.sql, sim.id);
    expect(history.map((h) => h.release_reason)).toEqual(["unlock", null]);
  });

  test("unlocking a number nobody holds answers 200 with the number", async () => {
    const a = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id]);
    const res = await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: a.token });
    expect(res.status).toBe(200);
    expect(res.body.data.locked).toBe(false);
  });

  test("expiry: a run-out lock is no lock; another organization may lock; the expiry job releases and announces", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token });
    await runOut(sim.id);
    const [row] = await ctx.sql<{ locked_until: Date }[]>`select locked_until from hosted_sims where id = ${sim.id}`;
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: a.token })).body.data).toMatchObject({ locked: false, lock: null });

    const outcome = await expireLock(ctx.services, { hosted_sim_id: sim.id, organization_id: a.org.id, locked_until: row!.locked_until.toISOString() });
    expect(outcome).toBe("cleared");
    await eventually(() => eventsFor(sim.id, "number.unlocked").some((e) => (e.data as any).reason === "expired"));
    expect((await lockHistory(ctx.sql, sim.id)).map((h) => h.release_reason)).toEqual(["expired"]);

    const byB = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: b.token });
    expect(byB.status).toBe(200);
    expect(byB.body.data.lock.organization_id).toBe(b.org.id);
    // A stale expiry job (for A's old lock) leaves B's lock alone.
    expect(await expireLock(ctx.services, { hosted_sim_id: sim.id, organization_id: a.org.id, locked_until: row!.locked_until.toISOString() })).toBe("gone");
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: b.token })).body.data.locked).toBe(true);
  });

  test("a lock that ran out without its job is replaced by the next holder, history marks it expired", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token });
    await runOut(sim.id);
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: b.token })).status).toBe(200);
    const history = await lockHistory(ctx.sql, sim.id);
    expect(history.map((h) => [h.organization_id, h.release_reason])).toEqual([
      [a.org.id, "expired"],
      [b.org.id, null],
    ]);
    // The replaced lock's number.unlocked (expired) comes before the new number.locked, in each
    // organization's log, as its expiry job (which now finds it gone) would have written it.
    const [row] = await ctx.sql<
      { locked_until: Date }[]
    >`select locked_until from number_locks where hosted_sim_id = ${sim.id} and organization_id = ${a.org.id}`;
    expect(await expireLock(ctx.services, { hosted_sim_id: sim.id, organization_id: a.org.id, locked_until: row!.locked_until.toISOString() })).toBe("gone");
    for (const org of [a.org.id, b.org.id]) {
      const log = await ctx.sql<{ type: string; reason: string | null; holder: number | null }[]>`
        select type, payload->>'reason' as reason, (payload->'lock'->>'organization_id')::bigint as holder
        from events where organization_id = ${org} and hosted_sim_id = ${sim.id} order by txid, id`;
      expect([org, [...log]]).toEqual([
        org,
        [
          { type: "number.locked", reason: null, holder: org === a.org.id ? a.org.id : null },
          { type: "number.unlocked", reason: "expired", holder: null },
          { type: "number.locked", reason: null, holder: org === b.org.id ? b.org.id : null },
        ],
      ]);
    }
  });

  test("race: concurrent lock requests from several organizations leave exactly one holder", async () => {
    const tenants = await Promise.all(Array.from({ length: 5 }, () => createTenant(ctx.sql)));
    const sim = await createSharedNumber(
      ctx.sql,
      tenants.map((t) => t.org.id),
    );
    const results = await Promise.all(tenants.map((t) => ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: t.token })));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(4);
    const [row] = await ctx.sql<{ lock_organization_id: number }[]>`select lock_organization_id from hosted_sims where id = ${sim.id}`;
    expect(row!.lock_organization_id).toBe(winners[0]!.body.data.lock.organization_id);
    expect((await lockHistory(ctx.sql, sim.id)).filter((h) => h.released_at === null)).toHaveLength(1);
  });

  test("bounds and API keys: duration 60..3600; numbers.lock needed", async () => {
    const a = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id]);
    for (const duration_seconds of [59, 3601, "600"]) {
      const res = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { duration_seconds } });
      expect(res.status).toBe(422);
    }
    const reader = await createApiKey(ctx.sql, a.org.id, ["numbers.read"]);
    expectErrorShape((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: reader.key })).body, "permission_denied");
    const locker = await createApiKey(ctx.sql, a.org.id, ["numbers.lock"]);
    const res = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: locker.key, body: { duration_seconds: 60 } });
    expect(res.status).toBe(200);
    expect(res.body.data.lock).toMatchObject({ organization_id: a.org.id, user_id: null });
    expect((await ctx.request("POST", `/api/numbers/${sim.id}/unlock`, { token: locker.key })).status).toBe(200);
  });
});

test("an SMS under another organization's lock changes nothing the others read of the number, updated_at included", async () => {
  const a = await createTenant(ctx.sql);
  const b = await createTenant(ctx.sql);
  const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
  expect((await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { duration_seconds: 600 } })).status).toBe(200);
  const before = (await ctx.request("GET", `/api/numbers/${sim.id}`, { token: b.token })).body.data;
  await receiveSms(ctx.sql, sim.id, { text: "for A only" });
  const after = (await ctx.request("GET", `/api/numbers/${sim.id}`, { token: b.token })).body.data;
  expect(after).toEqual(before);
});

// PostgreSQL only: a lock request must wait on the row a proof holds (holdLocks).
test.skipIf(!process.env.DATABASE_URL)(
  "a lock asked while a proof takes the number from the organization: it is not taken, and the next SMS is the new holder's",
  async () => {
    const a = await createTenant(ctx.sql, { plan: "pro" });
    const b = await createTenant(ctx.sql, { plan: "pro" });
    const byos = await createByosNumber(ctx.sql, a.org.id, { simStatus: "inactive" });
    // B's proof of the number, held open (as verification.ts runs it) while A asks for the lock.
    const release = await holdLocks(ctx.sql, (tx) => linkProvenNumber(tx, byos.number, b.org.id));
    const asked = ctx.request("POST", `/api/numbers/${byos.hostedSimId}/lock`, { token: a.token, body: { duration_seconds: 600 } });
    await lockWaiters(ctx.sql, 1);
    await release();
    expect((await asked).status).toBe(404);
    const [sim] = await ctx.sql<{ lock_organization_id: number | null }[]>`select lock_organization_id from hosted_sims where id = ${byos.hostedSimId}`;
    expect(sim!.lock_organization_id).toBeNull();
    const stored = await receiveSms(ctx.sql, byos.hostedSimId);
    const seen = await ctx.sql<{ organization_id: number }[]>`select organization_id from message_visibility where message_id = ${stored.messageId}`;
    expect(seen.map((r) => r.organization_id)).toEqual([b.org.id]);
  },
);

// PostgreSQL only: the lock request must wait on the number's row while the team goes (holdLocks).
test.skipIf(!process.env.DATABASE_URL)("a lock for a team deleted while the request waited answers 422 on team_id, not 500; no lock is taken", async () => {
  const a = await createTenant(ctx.sql);
  const team = await createTeam(ctx.sql, a.org.id);
  const sim = await createSharedNumber(ctx.sql, [a.org.id]);
  const release = await holdLocks(ctx.sql, (tx) => tx`select 1 from hosted_sims where id = ${sim.id} for update`);
  const asked = ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { team_id: team.id } });
  await lockWaiters(ctx.sql, 1);
  expect((await ctx.request("DELETE", `/api/teams/${team.id}`, { token: a.token })).status).toBe(204);
  await release();
  const res = await asked;
  expect(res.status).toBe(422);
  expect(Object.keys(expectErrorShape(res.body, "validation_failed").errors)).toEqual(["team_id"]);
  const [row] = await ctx.sql<{ lock_organization_id: number | null }[]>`select lock_organization_id from hosted_sims where id = ${sim.id}`;
  expect(row!.lock_organization_id).toBeNull();
});

test("a malformed release sender reads as a rule, not as the field's documentation", async () => {
  const a = await createTenant(ctx.sql);
  const sim = await createSharedNumber(ctx.sql, [a.org.id]);
  const res = await ctx.request("POST", `/api/numbers/${sim.id}/lock`, { token: a.token, body: { release_on_message: true, sender: "not a sender!" } });
  expect(res.status).toBe(422);
  expectErrorShape(res.body, "validation_failed");
  expect(res.body.errors).toEqual({ sender: ["must be an E.164 number or an alphanumeric sender id of at most 11 characters"] });
});
