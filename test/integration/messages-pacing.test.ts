import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Clock, systemClock } from "../../server/lib/clock";
import { resumeDevices } from "../../server/messages/pacer";
import { localTime } from "../../server/messages/sending-policy";
import { createFakeClock, type FakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { clockedContext } from "../fixtures-devices";
import { createByosNumber, createSharedNumber, eventually, randomNumber } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";

/**
 * Per-SIM pacing and routing to a healthy phone (issue 19 items 4 and 5) on a real database
 * with a fake clock: services instances whose job queue and pacer run on the clock, driven from
 * one pace job's due time to the next. The clock starts ahead of the database's own time, so
 * every job's due time is the clock's.
 */
const START = Date.parse("2027-03-02T12:00:00.000Z");
let base: TestContext;
beforeAll(async () => {
  base = await createTestContext();
}, 60_000);
afterAll(async () => {
  await base.close();
});

type Clocked = Awaited<ReturnType<typeof clockedContext>>;
/** An instance on `clock` with its workers running; device pick-up timeouts out of the way (10 days), events kept. */
async function instance(clock: FakeClock): Promise<Clocked> {
  // The clock runs months ahead of the database: the hourly retention must keep the test's events.
  const c = await clockedContext(base, clock, { OUTBOUND_DEVICE_TIMEOUT_SECONDS: 864_000, EVENT_RETENTION_DAYS: 36_500 } as never);
  c.services.start();
  return c;
}

const dueJobs = async (clock: FakeClock) =>
  (
    await base.sql<{ n: number }[]>`
      select count(*)::int as n from jobs where not dead and queue like 'message.outbound.%' and run_at <= ${new Date(clock.now())}`
  )[0]!.n;

/**
 * Waits until every outbound job due by the clock's time has run. A due job can be under another
 * worker's lease, which runs on the database's own time (up to 15 s: an instance stopped or killed
 * with it in hand, here or in an earlier test file on the same database); the queue watches for
 * lapsed leases in real time, whatever its clock.
 */
async function settle(clock: FakeClock) {
  const deadline = Date.now() + 60_000;
  while ((await dueJobs(clock)) > 0) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the due outbound jobs to run");
    await Bun.sleep(2);
  }
}

/**
 * Moves the clock to the next pace job of `sims` and lets it run; false when none is left. The
 * queue is woken after the jump: a poll that was in flight during it re-arms from the new time.
 * `beat`: the phone's heartbeat at the new time (a phone that sent none for hours is offline).
 */
async function step(c: Clocked, clock: FakeClock, sims: number[], beat?: () => Promise<unknown>) {
  const [next] = await base.sql<{ at: Date | null }[]>`
    select min(run_at) as at from jobs where queue = 'message.outbound.pace' and not dead and (payload->>'hosted_sim_id')::bigint = any(${sims}::bigint[])`;
  if (!next?.at) return false;
  if (next.at.getTime() > clock.now()) clock.set(next.at.getTime());
  c.services.jobs.wake();
  await settle(clock);
  if (beat) await beat();
  return true;
}

const dispatchedOf = async (ids: number[]) =>
  (
    await base.sql<{ id: number; at: Date }[]>`
      select id, dispatched_at as at from messages where id = any(${ids}::bigint[]) and dispatched_at is not null order by dispatched_at, id`
  ).map((r) => ({ id: r.id, at: r.at.getTime() }));

const dispatchedCount = async (ids: number[]) =>
  (await base.sql<{ n: number }[]>`select count(*)::int as n from messages where id = any(${ids}::bigint[]) and dispatched_at is not null`)[0]!.n;

/** The message.send orders in the event log per message (one per hand-over: a second would be a duplicate send). */
async function orders(ids: number[]) {
  const rows = await base.sql<{ id: number; n: number }[]>`
    select (payload->'message'->>'id')::bigint as id, count(*)::int as n from events
    where type = 'message.send' and (payload->'message'->>'id')::bigint = any(${ids}::bigint[]) group by 1`;
  return new Map(rows.map((r) => [r.id, r.n]));
}

const policy = (c: Clocked, token: string, path: string, body: unknown) => c.request("PUT", path, { token, body });

describe("pacing one SIM", () => {
  test("1,000 messages at 10/min go out at that rate, none in quiet hours, the daily cap holds; a restart midway neither bursts nor drops", async () => {
    const clock = createFakeClock(START);
    let c = await instance(clock);
    const t = await createTenant(base.sql, { plan: "enterprise" });
    const byos = await createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) });
    const set = await policy(c, t.token, `/api/numbers/${byos.hostedSimId}/sending-policy`, {
      messages_per_minute: 10,
      min_delay_seconds: 0,
      max_delay_seconds: 0,
      daily_cap: 300,
      time_zone: "Europe/Berlin",
      quiet_hours: { start: "22:00", end: "07:00" },
    });
    expect(set.status).toBe(200);
    expect(set.body.data.source).toBe("number");
    const to = Array.from({ length: 1000 }, () => randomNumber());
    const sent = await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: byos.hostedSimId, to, text: "paced" } });
    expect(sent.status).toBe(202);
    const ids: number[] = sent.body.data.messages.map((m: { id: number }) => m.id);
    // The phone heartbeats every minute of the clock (after a long jump it was offline: its return dispatches).
    let lastBeat = Number.NEGATIVE_INFINITY;
    const beat = async () => {
      if (clock.now() - lastBeat < 60_000) return;
      lastBeat = clock.now();
      expect((await c.request("POST", `/api/byos/devices/${byos.deviceId}/heartbeat`, { token: t.token, body: {} })).status).toBe(200);
      await eventually(async () => (await base.sql`select 1 from devices where id = ${byos.deviceId} and is_online`).length > 0);
      await settle(clock);
    };

    // First half on one instance, then a new one on the same database (the first stopped).
    while ((await dispatchedCount(ids)) < 450 && (await step(c, clock, [byos.hostedSimId], beat))) {}
    await c.close();
    const atRestart = (await dispatchedOf(ids)).length;
    expect(atRestart).toBeGreaterThanOrEqual(450);
    c = await instance(clock);
    lastBeat = Number.NEGATIVE_INFINITY;
    while (await step(c, clock, [byos.hostedSimId], beat)) {}
    await c.close();

    const out = await dispatchedOf(ids);
    expect(out).toHaveLength(1000);
    expect(new Set(out.map((o) => o.id)).size).toBe(1000);
    const once = await orders(ids);
    expect(once.size).toBe(1000);
    expect([...once.values()].every((n) => n === 1)).toBe(true);
    const perDay = new Map<string, number>();
    for (const [i, o] of out.entries()) {
      const local = localTime(o.at, "Europe/Berlin");
      const minute = Math.floor(local.msOfDay / 60_000);
      expect(minute >= 7 * 60 && minute < 22 * 60).toBe(true);
      perDay.set(local.day, (perDay.get(local.day) ?? 0) + 1);
      // 10 a minute: never closer than 6 s, across the restart too.
      if (i > 0) expect(o.at - out[i - 1]!.at).toBeGreaterThanOrEqual(6_000);
    }
    expect([...perDay.values()]).toEqual([300, 300, 300, 100]);
    // At that rate, not slower: a day's 300 go out back to back, 6 s apart.
    expect(out[299]!.at - out[0]!.at).toBe(299 * 6_000);
    expect(out[0]!.at).toBe(START);
  }, 300_000);
});

describe("a phone that is away", () => {
  test("offline for 10 minutes with 100 sends queued: all go out after it returns, none after its expiry, none twice", async () => {
    const clock = createFakeClock(START);
    const c = await instance(clock);
    const t = await createTenant(base.sql, { plan: "enterprise" });
    const byos = await createByosNumber(base.sql, t.org.id, { online: false });
    await policy(c, t.token, "/api/sending-policy", { messages_per_minute: 60, min_delay_seconds: 0, max_delay_seconds: 0, daily_cap: 1000 });
    const ids: number[] = [];
    const expiring: number[] = [];
    for (let i = 0; i < 100; i++) {
      // Every fifth may wait 5 minutes only; the others an hour, or without limit.
      const expires = i % 5 === 0 ? 5 * 60_000 : i % 2 === 0 ? 3_600_000 : null;
      const body = {
        hosted_sim: byos.hostedSimId,
        to: randomNumber(),
        text: `wait ${i}`,
        ...(expires ? { expires_at: new Date(clock.now() + expires).toISOString() } : {}),
      };
      const res = await c.request("POST", "/api/messages", { token: t.token, body });
      expect(res.status).toBe(202);
      expect(res.body.data.status).toBe("queued");
      ids.push(res.body.data.id);
      if (i % 5 === 0) expiring.push(res.body.data.id);
    }
    await settle(clock);
    expect(await dispatchedOf(ids)).toHaveLength(0);
    // Ten minutes pass: the short-lived ones expire, the rest keep waiting (no 300 s failure).
    for (let m = 1; m <= 10; m++) {
      clock.advance(60_000);
      c.services.jobs.wake();
      await settle(clock);
    }
    const statuses = await base.sql<{ status: string; n: number }[]>`
      select status, count(*)::int as n from messages where id = any(${ids}::bigint[]) group by status order by status`;
    expect([...statuses]).toEqual([
      { status: "expired", n: 20 },
      { status: "queued", n: 80 },
    ]);
    // The phone comes back: its heartbeat's device.online starts the hand-over, paced at 1 a second.
    const beat = await c.request("POST", `/api/byos/devices/${byos.deviceId}/heartbeat`, { token: t.token, body: {} });
    expect(beat.status).toBe(200);
    await eventually(async () => (await dispatchedOf(ids)).length > 0, 10_000, "the first hand-over after the phone returned");
    while (await step(c, clock, [byos.hostedSimId])) {}
    const out = await dispatchedOf(ids);
    expect(out).toHaveLength(80);
    expect(out.filter((o) => expiring.includes(o.id))).toHaveLength(0);
    const once = await orders(ids);
    expect(once.size).toBe(80);
    expect([...once.values()].every((n) => n === 1)).toBe(true);
    expect(out[0]!.at).toBeGreaterThanOrEqual(START + 10 * 60_000);
    await c.close();
  }, 120_000);
});

describe("an instance whose clock is behind the database's", () => {
  test("its pace jobs, claimed by the database's time, go on at every slot: no send is left waiting", async () => {
    // Two seconds behind: the queue claims a job due at a slot once the database reaches it.
    const behind: Clock = { ...systemClock, now: () => Date.now() - 2_000 };
    const c = await clockedContext(base, behind, { OUTBOUND_DEVICE_TIMEOUT_SECONDS: 864_000 } as never);
    c.services.start();
    const t = await createTenant(base.sql, { plan: "enterprise" });
    const byos = await createByosNumber(base.sql, t.org.id, { online: true });
    await policy(c, t.token, "/api/sending-policy", { messages_per_minute: 60, min_delay_seconds: 1, max_delay_seconds: 1, daily_cap: 1000 });
    const ids: number[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: byos.hostedSimId, to: randomNumber(), text: `s${i}` } })).body.data.id,
      );
    const out = await eventually(
      async () => {
        const handed = await dispatchedOf(ids);
        return handed.length === 3 && handed;
      },
      15_000,
      "every send handed over",
    );
    // Paced all the same: a second between hand-overs.
    expect(out[1]!.at - out[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(out[2]!.at - out[1]!.at).toBeGreaterThanOrEqual(1000);
    await c.close();
  }, 30_000);
});

describe("a fleet back at once", () => {
  test("one resume for several devices (a batch of device-online jobs) hands over every device's waiting send, once", async () => {
    const clock = createFakeClock(START);
    const c = await instance(clock);
    const t = await createTenant(base.sql, { plan: "enterprise" });
    const phones = await Promise.all([1, 2, 3].map(() => createByosNumber(base.sql, t.org.id, { online: false })));
    const idle = await createByosNumber(base.sql, t.org.id, { online: false });
    await policy(c, t.token, "/api/sending-policy", { messages_per_minute: 60, min_delay_seconds: 0, max_delay_seconds: 0, daily_cap: 1000 });
    const ids: number[] = [];
    for (const p of phones) {
      const res = await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: p.hostedSimId, to: randomNumber(), text: "back" } });
      expect(res.status).toBe(202);
      ids.push(res.body.data.id);
    }
    await settle(clock);
    expect(await dispatchedCount(ids)).toBe(0);
    // Online in the database without their heartbeats' jobs, then one call as the queue makes for a batch.
    const devices = [...phones, idle].map((p) => p.deviceId);
    await base.sql`update devices set is_online = true, last_seen_at = ${new Date(clock.now())} where id = any(${devices}::bigint[])`;
    const deps = { sql: c.services.sql, jobs: c.services.jobs, events: c.services.events, clock, deviceTimeoutSeconds: 864_000 };
    await resumeDevices(deps, devices);
    expect(await dispatchedCount(ids)).toBe(3);
    // Again (a job run twice, an instance's repeat): nothing is handed over a second time.
    await resumeDevices(deps, devices);
    await resumeDevices(deps, []);
    const once = await orders(ids);
    expect(once.size).toBe(3);
    expect([...once.values()].every((n) => n === 1)).toBe(true);
    await c.close();
  }, 60_000);
});

describe("a pool's phone that goes away", () => {
  test("sends of a pool waiting for a phone that went offline move to another online number of the pool, sticky kept, paced there, none twice; a one-number send waits", async () => {
    const clock = createFakeClock(START);
    const c = await instance(clock);
    const t = await createTenant(base.sql, { plan: "enterprise" });
    const a = await createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) });
    const b = await createByosNumber(base.sql, t.org.id, { online: false });
    const d = await createByosNumber(base.sql, t.org.id, { online: false });
    await policy(c, t.token, "/api/sending-policy", { messages_per_minute: 1, min_delay_seconds: 0, max_delay_seconds: 0, daily_cap: 1000 });
    // d wrote to `friend` before: once online again it is the friend's sticky number.
    const friend = randomNumber();
    await base.sql`update devices set is_online = true where id = ${d.deviceId}`;
    const earlier = await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: d.hostedSimId, to: friend, text: "earlier" } });
    expect(earlier.status).toBe(202);
    await settle(clock);
    await base.sql`update devices set is_online = false where id = ${d.deviceId}`;
    // Only a is online: every pool send goes from it, one a minute.
    const pool = [a.hostedSimId, b.hostedSimId, d.hostedSimId];
    const to = [randomNumber(), randomNumber(), friend, randomNumber(), randomNumber()];
    const res = await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sims: pool, to, text: "pooled" } });
    expect(res.status).toBe(202);
    const ids: number[] = res.body.data.messages.map((m: { id: number; hosted_sim_id: number }) => m.id);
    expect(res.body.data.messages.every((m: { hosted_sim_id: number }) => m.hosted_sim_id === a.hostedSimId)).toBe(true);
    const alone = await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: a.hostedSimId, to: randomNumber(), text: "a only" } });
    await settle(clock);
    expect(await dispatchedCount(ids)).toBe(1);
    // a's phone goes away, b's and d's come back; a's next slot finds it away and moves the pool's sends.
    await base.sql`update devices set is_online = false where id = ${a.deviceId}`;
    await base.sql`update devices set is_online = true where id = any(${[b.deviceId, d.deviceId]}::bigint[])`;
    while (await step(c, clock, [a.hostedSimId, b.hostedSimId, d.hostedSimId])) {}
    const rows = await base.sql<{ id: number; to: string; sim: number; at: Date | null }[]>`
      select id, to_number as "to", hosted_sim_id as sim, dispatched_at as at from messages where id = any(${ids}::bigint[]) order by id`;
    expect(rows.every((r) => r.at !== null)).toBe(true);
    expect(rows[0]!.sim).toBe(a.hostedSimId);
    expect(rows.find((r) => r.to === friend)!.sim).toBe(d.hostedSimId);
    expect(rows.slice(1).every((r) => r.sim !== a.hostedSimId)).toBe(true);
    expect(rows.filter((r) => r.sim === b.hostedSimId).length).toBeGreaterThanOrEqual(1);
    const once = await orders(ids);
    expect([...once.values()]).toEqual([1, 1, 1, 1, 1]);
    // Each moved send's order went to its new phone; its history row is on its new number.
    const sent = await base.sql<{ id: number; device: number }[]>`
      select (payload->'message'->>'id')::bigint as id, device_id as device from events where type = 'message.send' and (payload->'message'->>'id')::bigint = any(${ids}::bigint[])`;
    const deviceOf = new Map([
      [a.hostedSimId, a.deviceId],
      [b.hostedSimId, b.deviceId],
      [d.hostedSimId, d.deviceId],
    ]);
    for (const r of rows) expect(sent.find((s) => s.id === r.id)!.device).toBe(deviceOf.get(r.sim)!);
    const views = await base.sql<{ message_id: number; hosted_sim_id: number }[]>`
      select message_id, hosted_sim_id from message_visibility where message_id = any(${ids}::bigint[]) order by message_id`;
    expect(views.map((v) => v.hosted_sim_id)).toEqual(rows.map((r) => r.sim));
    // Paced on their new numbers: one a minute on each.
    for (const sim of [b.hostedSimId, d.hostedSimId]) {
      const times = rows
        .filter((r) => r.sim === sim)
        .map((r) => r.at!.getTime())
        .sort((x, y) => x - y);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(60_000);
    }
    // A send from one number (not a pool) keeps waiting for its phone.
    const [kept] = await base.sql<
      { sim: number; at: Date | null }[]
    >`select hosted_sim_id as sim, dispatched_at as at from messages where id = ${alone.body.data.id}`;
    expect(kept).toEqual({ sim: a.hostedSimId, at: null });
    await c.close();
  }, 120_000);
});

/**
 * A tenant with four BYOS numbers for sender pool tests: one offline, one online whose own policy
 * caps it at `cappedDailyCap` a day, two online; everything else paced at 600 a minute, no pause.
 */
async function poolOfFour(c: Clocked, cappedDailyCap: number) {
  const t = await createTenant(base.sql, { plan: "enterprise" });
  const offline = await createByosNumber(base.sql, t.org.id, { online: false });
  const capped = await createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) });
  const third = await createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) });
  const fourth = await createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) });
  const fast = { messages_per_minute: 600, min_delay_seconds: 0, max_delay_seconds: 0 };
  await policy(c, t.token, "/api/sending-policy", { ...fast, daily_cap: 1000 });
  await policy(c, t.token, `/api/numbers/${capped.hostedSimId}/sending-policy`, { ...fast, daily_cap: cappedDailyCap });
  return { t, offline, capped, third, fourth };
}

describe("sender pools (hosted_sims)", () => {
  test("one phone offline, one at its cap: the sends go through the third; sticky sender holds across 100 messages", async () => {
    const clock = createFakeClock(START);
    const c = await instance(clock);
    const { t, offline, capped, third, fourth } = await poolOfFour(c, 1);
    const send = (hosted_sims: number[], to: string) => c.request("POST", "/api/messages", { token: t.token, body: { hosted_sims, to, text: "pool" } });
    // The capped number uses its one message of the day.
    expect((await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: capped.hostedSimId, to: randomNumber(), text: "x" } })).status).toBe(
      202,
    );
    await settle(clock);
    const pool = [offline.hostedSimId, capped.hostedSimId, third.hostedSimId];
    for (let i = 0; i < 5; i++) {
      const res = await send(pool, randomNumber());
      expect(res.status).toBe(202);
      expect(res.body.data.hosted_sim_id).toBe(third.hostedSimId);
    }
    // Sticky: one recipient keeps the number that first wrote to it, though others are as healthy.
    const wide = [offline.hostedSimId, capped.hostedSimId, third.hostedSimId, fourth.hostedSimId];
    const friend = randomNumber();
    const first = await send(wide, friend);
    const chosen = first.body.data.hosted_sim_id;
    expect([third.hostedSimId, fourth.hostedSimId]).toContain(chosen);
    for (let i = 0; i < 99; i++) {
      const res = await send(wide, friend);
      expect(res.status).toBe(202);
      expect(res.body.data.hosted_sim_id).toBe(chosen);
    }
    await settle(clock);
    await c.close();
  }, 120_000);

  test("a bulk send through a pool: each recipient by the same rule (sticky kept, offline skipped, caps held, load spread), one batch, in request order", async () => {
    const clock = createFakeClock(START);
    const c = await instance(clock);
    const { t, offline, capped, third, fourth } = await poolOfFour(c, 3);
    const friend = randomNumber();
    expect((await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sim: fourth.hostedSimId, to: friend, text: "hi" } })).status).toBe(202);
    await settle(clock);
    const to = [...Array.from({ length: 10 }, () => randomNumber()), friend, ...Array.from({ length: 9 }, () => randomNumber())];
    const pool = [offline.hostedSimId, capped.hostedSimId, third.hostedSimId, fourth.hostedSimId];
    const res = await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sims: pool, to, text: "pooled bulk" } });
    expect(res.status).toBe(202);
    const messages: { to: string; hosted_sim_id: number; batch_id: string }[] = res.body.data.messages;
    expect(messages.map((m) => m.to)).toEqual(to);
    expect(new Set(messages.map((m) => m.batch_id))).toEqual(new Set([res.body.data.batch_id]));
    const per = (sim: number) => messages.filter((m) => m.hosted_sim_id === sim).length;
    expect(messages.find((m) => m.to === friend)!.hosted_sim_id).toBe(fourth.hostedSimId);
    expect(per(offline.hostedSimId)).toBe(0);
    expect(per(capped.hostedSimId)).toBe(3);
    expect(per(third.hostedSimId) + per(fourth.hostedSimId)).toBe(17);
    expect(Math.abs(per(third.hostedSimId) - (per(fourth.hostedSimId) + 1))).toBeLessThanOrEqual(1);
    const listed = await c.request("GET", `/api/messages?batch=${res.body.data.batch_id}&per_page=100`, { token: t.token });
    expect(listed.body.data).toHaveLength(20);
    await settle(clock);
    await c.close();
  }, 120_000);

  test("validation: hosted_sim or hosted_sims, not both", async () => {
    const clock = createFakeClock(START);
    const c = await instance(clock);
    const t = await createTenant(base.sql);
    const a = await createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) });
    const both = await c.request("POST", "/api/messages", {
      token: t.token,
      body: { hosted_sim: a.hostedSimId, hosted_sims: [a.hostedSimId], to: "+15550001234", text: "x" },
    });
    expect(both.status).toBe(422);
    expect(both.body.message).toBe("The hosted_sim field must not be given with hosted_sims: send from one number or from a pool.");
    const none = await c.request("POST", "/api/messages", { token: t.token, body: { to: "+15550001234", text: "x" } });
    expect(none.status).toBe(422);
    expect(none.body.message).toBe("The hosted_sim field is required, unless hosted_sims (a sender pool) is given.");
    const empty = await c.request("POST", "/api/messages", { token: t.token, body: { hosted_sims: [], to: "+15550001234", text: "x" } });
    expect(empty.status).toBe(422);
    await c.close();
  }, 60_000);
});

describe("sending policy API", () => {
  test("defaults, organization default, number override and its removal; validation in API.md §1 shape", async () => {
    const t = await createTenant(base.sql);
    const byos = await createByosNumber(base.sql, t.org.id);
    const get = (path: string, token = t.token) => base.request("GET", path, { token });
    const def = await get("/api/sending-policy");
    expect(def.body.data).toEqual({
      messages_per_minute: 6,
      min_delay_seconds: 8,
      max_delay_seconds: 20,
      daily_cap: 200,
      time_zone: "UTC",
      quiet_hours: null,
      source: "default",
    });
    const org = await base.request("PUT", "/api/sending-policy", {
      token: t.token,
      body: {
        messages_per_minute: 4,
        min_delay_seconds: 10,
        max_delay_seconds: 30,
        daily_cap: 100,
        // Stored as the zone's own spelling, whatever the letter case sent.
        time_zone: "america/new_YORK",
        quiet_hours: { start: "21:00", end: "08:30" },
      },
    });
    expect(org.status).toBe(200);
    expect((await get(`/api/numbers/${byos.hostedSimId}/sending-policy`)).body.data).toMatchObject({
      messages_per_minute: 4,
      quiet_hours: { start: "21:00", end: "08:30" },
      time_zone: "America/New_York",
      source: "organization",
    });
    const own = { messages_per_minute: 2, min_delay_seconds: 0, max_delay_seconds: 5, daily_cap: 50 };
    expect((await base.request("PUT", `/api/numbers/${byos.hostedSimId}/sending-policy`, { token: t.token, body: own })).body.data).toMatchObject({
      ...own,
      time_zone: "UTC",
      quiet_hours: null,
      source: "number",
    });
    expect((await base.request("DELETE", `/api/numbers/${byos.hostedSimId}/sending-policy`, { token: t.token })).body.data.source).toBe("organization");
    // A fixed UTC offset is a time zone too (the runtime's), as the document says.
    const offset = await base.request("PUT", `/api/numbers/${byos.hostedSimId}/sending-policy`, { token: t.token, body: { ...own, time_zone: "+05:30" } });
    expect([offset.status, offset.body.data?.time_zone]).toEqual([200, "+05:30"]);
    await base.request("DELETE", `/api/numbers/${byos.hostedSimId}/sending-policy`, { token: t.token });
    // A pool number sends through the provider, which no policy paces: a policy of its own would read as in force.
    const pool = await createSharedNumber(base.sql, [t.org.id]);
    const onPool = await base.request("PUT", `/api/numbers/${pool.id}/sending-policy`, { token: t.token, body: own });
    expect(onPool.status).toBe(409);
    expect(onPool.body.code).toBe("invalid_state");
    expect((await get(`/api/numbers/${pool.id}/sending-policy`)).body.data.source).toBe("organization");

    const bad = await base.request("PUT", "/api/sending-policy", {
      token: t.token,
      body: {
        messages_per_minute: 4,
        min_delay_seconds: 30,
        max_delay_seconds: 10,
        daily_cap: 100,
        time_zone: "Mars/Olympus",
        quiet_hours: { start: "08:00", end: "08:00" },
      },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe("validation_failed");
    expect(Object.keys(bad.body.errors).sort()).toEqual(["max_delay_seconds", "quiet_hours.end", "time_zone"]);
    const outOfRange = await base.request("PUT", "/api/sending-policy", { token: t.token, body: { ...own, messages_per_minute: 0 } });
    expect(outOfRange.status).toBe(422);
    // The document says integer: a string of digits is not one (Elysia's t.Integer took "5" as 5).
    const asText = await base.request("PUT", "/api/sending-policy", { token: t.token, body: { ...own, daily_cap: "50" } });
    expect(asText.status).toBe(422);
    expect(Object.keys(asText.body.errors)).toEqual(["daily_cap"]);
  });

  test("isolation and permissions: another organization cannot read or set your policy or send from your numbers in a pool; members read, admins set; API keys cannot set", async () => {
    const t = await createTenant(base.sql);
    const byos = await createByosNumber(base.sql, t.org.id, { online: true, seenAt: new Date(START) });
    const other = await createTenant(base.sql);
    const body = { messages_per_minute: 1, min_delay_seconds: 0, max_delay_seconds: 0, daily_cap: 1 };
    const path = `/api/numbers/${byos.hostedSimId}/sending-policy`;
    expect((await base.request("GET", path, { token: other.token })).status).toBe(404);
    expect((await base.request("PUT", path, { token: other.token, body })).status).toBe(404);
    expect((await base.request("DELETE", path, { token: other.token })).status).toBe(404);
    // Their default is theirs: setting it leaves ours alone.
    await base.request("PUT", "/api/sending-policy", { token: other.token, body });
    expect((await base.request("GET", path, { token: t.token })).body.data.source).toBe("default");
    const mine = await createByosNumber(base.sql, other.org.id, { online: true });
    const pooled = await base.request("POST", "/api/messages", {
      token: other.token,
      body: { hosted_sims: [mine.hostedSimId, byos.hostedSimId], to: randomNumber(), text: "borrowed" },
    });
    expect(pooled.status).toBe(404);
    expect(pooled.body.code).toBe("not_found");

    const member = await createTenant(base.sql, { role: "member" });
    expect((await base.request("GET", "/api/sending-policy", { token: member.token })).status).toBe(200);
    const refused = await base.request("PUT", "/api/sending-policy", { token: member.token, body: { bogus: true } });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("permission_denied");
    const { createApiKey } = await import("../fixtures");
    const key = await createApiKey(base.sql, t.org.id, ["numbers.read"]);
    expect((await base.request("GET", path, { token: key.key })).status).toBe(200);
    expect((await base.request("PUT", path, { token: key.key, body })).status).toBe(403);
    const blind = await createApiKey(base.sql, t.org.id, ["messages.read"]);
    expect((await base.request("GET", path, { token: blind.key })).status).toBe(403);
  });
});
