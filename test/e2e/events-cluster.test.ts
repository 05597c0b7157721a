import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomString } from "../../server/lib/crypto";
import { createApiKey, createTenant } from "../fixtures";
import { appendAndNotify, type EventPageBody, testEvent, timedRounds } from "../fixtures-events";
import { eventually } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";
import { type Instance, spawnInstance } from "./instances";

/**
 * Issue 16, "long-poll across two instances": a waiter on instance A (a server process) is
 * answered within 100 ms of an event appended on instance B (an in-process instance on the same
 * PostgreSQL and Redis, which appends and notifies as a change does). A learns of it only through
 * its own event tail, woken by B's notify over Redis.
 */
const enabled = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);
if (!enabled) console.warn("events-cluster: skipped (set DATABASE_URL and REDIS_URL: two instances need a shared PostgreSQL and Redis)");

const METRICS_TOKEN = randomString(24);
let b: TestContext;
let a: Instance;

/** The calls waiting on A, from its metrics. */
async function waitingOnA(): Promise<number> {
  const text = await (await fetch(`${a.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return Number(text.match(/^simhost_event_waiters (\d+)/m)?.[1] ?? Number.NaN);
}

async function get(token: string, query: string) {
  const res = await fetch(`${a.baseUrl}/api/events?${query}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as EventPageBody, at: performance.now() };
}

describe.skipIf(!enabled)("GET /api/events?wait= across two instances on one PostgreSQL and Redis", () => {
  beforeAll(async () => {
    b = await createTestContext({ REDIS_PREFIX: `simhost-test-${randomString(8)}:` });
    a = await spawnInstance({
      DATABASE_URL: b.config.DATABASE_URL!,
      REDIS_URL: process.env.REDIS_URL!,
      REDIS_PREFIX: b.config.REDIS_PREFIX,
      METRICS_TOKEN,
      WORKERS: "0",
    });
  }, 90_000);

  afterAll(async () => {
    a?.proc.kill("SIGTERM");
    await a?.proc.exited;
    await b?.close();
  }, 30_000);

  test("waiters on A answer within 100 ms of an event appended on B, each with its own organization's events only", async () => {
    const t = await createTenant(b.sql);
    const other = await createTenant(b.sql);
    const key = (await createApiKey(b.sql, t.org.id, ["numbers.read"])).key;
    let start = (await get(t.token, "after=now")).body.meta.next_cursor;
    const otherStart = (await get(other.token, "after=now")).body.meta.next_cursor;
    // The other organization waits through every round: no event of t answers it.
    const theirs = get(other.token, `after=${otherStart}&wait=10`);
    await eventually(async () => (await waitingOnA()) === 1, 5000, "the other organization's wait on A");
    // Three rounds within 100 ms, each by both waits (timedRounds: late rounds on a loaded machine).
    await timedRounds({ needed: 3, limitMs: 100 }, async (round) => {
      const waits = [get(t.token, `after=${start}&wait=30`), get(key, `after=${start}&wait=30&types=device.online`)] as const;
      await eventually(async () => (await waitingOnA()) === 3, 5000, "three waits on A");
      const { readable } = await appendAndNotify(b, [testEvent(t.org.id, round, { type: "device.online", deviceId: 1 })]);
      const notified = performance.now();
      const [mine, keyed] = await Promise.all(waits);
      expect(mine.body.data.map((e) => [e.organization_id, e.data.n])).toEqual([[t.org.id, round]]);
      expect(keyed.body.data.map((e) => e.data.n)).toEqual([round]);
      start = mine.body.meta.next_cursor;
      const after = Math.max(mine.at, keyed.at) - notified;
      if (process.env.EVENTS_TIMING)
        console.log(`round ${round}: answered on A ${Math.round(after)} ms after B's notify${readable ? "" : " (held back by an older transaction)"}`);
      // An event held back by someone else's older transaction cannot be answered before it ends: not timed.
      return readable ? after : null;
    });
    expect((await theirs).body).toEqual({ data: [], meta: { next_cursor: otherStart, per_page: 100, has_more: false } });
  }, 60_000);
});
