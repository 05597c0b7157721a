import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isAfter } from "../../server/events/cursor";
import { createApiKey, createTenant } from "../fixtures";
import { append, appendAndNotify, type EventPageBody, testEvent, timedRounds } from "../fixtures-events";
import { eventually } from "../fixtures-numbers";
import { buildRequest, createTestContext, expectErrorShape, readResponse, type TestContext } from "../helpers";

/**
 * Issue 16 item 3: GET /api/events?wait= holds an empty answer until a matching event is
 * appended. Each wait is started, then the test waits until it is registered before appending.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
}, 60_000);
afterAll(() => ctx.close());

type Answer = { status: number; body: EventPageBody & { code?: string }; headers: Headers; at: number };

/** Starts a wait and resolves once `waiting` calls are registered; the answer comes wrapped. */
async function startWait(token: string, query: string, waiting = ctx.services.eventWaiters.size() + 1, signal?: AbortSignal) {
  const request = buildRequest("http://localhost:3000", "GET", `/api/events?${query}`, { token }, { signal });
  const answer: Promise<Answer> = ctx.app
    .handle(request)
    .then(readResponse)
    .then((res) => ({ ...res, at: performance.now() }));
  let settled = false;
  void answer.then(() => (settled = true));
  await eventually(() => ctx.services.eventWaiters.size() >= waiting || settled, 5000, "the wait to register");
  return { answer, settled: () => settled };
}

/** Resolves once this instance's tail has handed on everything readable now (so a waiter has seen it). */
async function tailCaughtUp() {
  const [row] = await ctx.sql<{ txid: string; id: number }[]>`select txid::text as txid, id from events order by id desc limit 1`;
  if (row) await eventually(() => !isAfter(row, ctx.services.events.position()), 5000, "the tail to hand on the events");
}

const ns = (body: EventPageBody) => body.data.map((e) => e.data.n);

describe("GET /api/events?wait=", () => {
  test("answers within 100 ms of an append on this instance (notify), with the new events and their cursor", async () => {
    const t = await createTenant(ctx.sql);
    let after = (await ctx.request("GET", "/api/events?after=now", { token: t.token })).body.meta.next_cursor;
    await timedRounds({ needed: 3, limitMs: 100 }, async (round) => {
      const waiting = await startWait(t.token, `after=${after}&wait=30`);
      const { readable } = await appendAndNotify(ctx, [testEvent(t.org.id, 2 * round), testEvent(t.org.id, 2 * round + 1)]);
      const notified = performance.now();
      const res = await waiting.answer;
      expect(res.status).toBe(200);
      expect(ns(res.body)).toEqual([2 * round, 2 * round + 1]);
      expect(res.body.meta.next_cursor).toBe(res.body.data[1]!.id);
      after = res.body.meta.next_cursor;
      if (process.env.EVENTS_TIMING)
        console.log(`wake-up ${Math.round(res.at - notified)} ms after notify${readable ? "" : " (held back by an older transaction)"}`);
      // An append held back by someone else's older transaction (fixtures-events.ts) is not timed.
      return readable ? res.at - notified : null;
    });
    expect(ctx.services.eventWaiters.size()).toBe(0);
  }, 30_000);

  test("a wake-up answers at most per_page events and says more follow; the cursor then lists the rest", async () => {
    const t = await createTenant(ctx.sql);
    const now = (await ctx.request("GET", "/api/events?after=now", { token: t.token })).body.meta.next_cursor;
    const waiting = await startWait(t.token, `after=${now}&wait=30&per_page=2`);
    await appendAndNotify(
      ctx,
      [1, 2, 3].map((n) => testEvent(t.org.id, n)),
    );
    const res = await waiting.answer;
    expect(ns(res.body)).toEqual([1, 2]);
    expect(res.body.meta).toEqual({ next_cursor: res.body.data[1]!.id, per_page: 2, has_more: true });
    // The woken answer (serialized once per wake-up) is the answer a listing gives, headers included.
    const listed = await ctx.request("GET", `/api/events?after=${now}&per_page=2`, { token: t.token });
    expect(res.body).toEqual(listed.body);
    expect(JSON.stringify(res.body)).toBe(JSON.stringify(listed.body));
    expect(res.headers.get("content-type")).toBe(listed.headers.get("content-type"));
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(ns((await ctx.request("GET", `/api/events?after=${res.body.meta.next_cursor}`, { token: t.token })).body)).toEqual([3]);
  }, 30_000);

  test("an event that already matches answers at once", async () => {
    const t = await createTenant(ctx.sql);
    await append(ctx, [testEvent(t.org.id, 1)]);
    const started = performance.now();
    const res = await ctx.request("GET", "/api/events?wait=30", { token: t.token });
    expect(ns(res.body)).toEqual([1]);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test("nothing matching within the wait: an empty list with the same cursor, after the wait", async () => {
    const t = await createTenant(ctx.sql);
    const now = (await ctx.request("GET", "/api/events?after=now", { token: t.token })).body.meta.next_cursor;
    const started = performance.now();
    const res = await ctx.request("GET", `/api/events?after=${now}&wait=1`, { token: t.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], meta: { next_cursor: now, per_page: 100, has_more: false } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(ctx.services.eventWaiters.size()).toBe(0);
  });

  test("events of other organizations, types, numbers or devices do not answer a wait; the matching one does, alone", async () => {
    const t = await createTenant(ctx.sql);
    const other = await createTenant(ctx.sql);
    const now = (await ctx.request("GET", "/api/events?after=now", { token: t.token })).body.meta.next_cursor;
    const waiting = await startWait(t.token, `after=${now}&types=message.received&hosted_sim=501&wait=30`);
    await append(ctx, [
      testEvent(other.org.id, 1, { type: "message.received", hostedSimId: 501 }),
      testEvent(t.org.id, 2, { type: "message.sent", hostedSimId: 501 }),
      testEvent(t.org.id, 3, { type: "message.received", hostedSimId: 502 }),
    ]);
    await tailCaughtUp();
    expect(waiting.settled()).toBe(false);
    await appendAndNotify(ctx, [testEvent(t.org.id, 4, { type: "message.received", hostedSimId: 501 })]);
    const res = await waiting.answer;
    expect(ns(res.body)).toEqual([4]);
  });

  test("an API key waiting without types is answered only by the families it holds", async () => {
    const t = await createTenant(ctx.sql);
    const key = (await createApiKey(ctx.sql, t.org.id, ["messages.read"])).key;
    const now = (await ctx.request("GET", "/api/events?after=now", { token: key })).body.meta.next_cursor;
    const waiting = await startWait(key, `after=${now}&wait=30`);
    await append(ctx, [testEvent(t.org.id, 1, { type: "device.online" })]);
    await tailCaughtUp();
    expect(waiting.settled()).toBe(false);
    await appendAndNotify(ctx, [testEvent(t.org.id, 2, { type: "message.received" })]);
    expect(ns((await waiting.answer).body)).toEqual([2]);
  });

  test("too many waits of one organization on this server: 429 with Retry-After; a client that leaves frees its place", async () => {
    const t = await createTenant(ctx.sql);
    const limits = ctx.services.eventWaiters.limits;
    const saved = limits.perOrganization;
    limits.perOrganization = 2;
    try {
      const leaving = new AbortController();
      const first = await startWait(t.token, "after=now&wait=30", undefined, leaving.signal);
      const second = await startWait(t.token, "after=now&wait=30");
      const refused = await ctx.request("GET", "/api/events?after=now&wait=30", { token: t.token });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expectErrorShape(refused.body, "rate_limited");
      // Another organization still waits.
      const other = await createTenant(ctx.sql);
      const elsewhere = await startWait(other.token, "after=now&wait=1");
      expect((await elsewhere.answer).status).toBe(200);
      const size = ctx.services.eventWaiters.size();
      leaving.abort();
      await first.answer.catch(() => {});
      await eventually(() => ctx.services.eventWaiters.size() === size - 1, 5000, "the aborted wait to be removed");
      const third = await startWait(t.token, "after=now&wait=1");
      expect((await third.answer).status).toBe(200);
      await appendAndNotify(ctx, [testEvent(t.org.id, 1)]);
      expect(ns((await second.answer).body)).toEqual([1]);
    } finally {
      limits.perOrganization = saved;
    }
  }, 30_000);
});

describe("a credential revoked while its call waits", () => {
  test("logging out ends the session's wait at once with 401: events appended afterwards are not handed over; another session of the user waits on", async () => {
    const t = await createTenant(ctx.sql);
    const second = (await ctx.request("POST", "/api/auth/login", { body: { email: t.user.email, password: t.user.password } })).body.token as string;
    const leaving = await startWait(t.token, "after=now&wait=60");
    const staying = await startWait(second, "after=now&wait=60");
    expect((await ctx.request("POST", "/api/auth/logout", { token: t.token })).status).toBe(204);
    expect(ctx.services.eventWaiters.size(t.org.id)).toBe(1);
    await appendAndNotify(ctx, [testEvent(t.org.id, 1)]);
    const res = await leaving.answer;
    expect(res.status).toBe(401);
    expectErrorShape(res.body, "unauthenticated");
    const kept = await staying.answer;
    expect([kept.status, ns(kept.body)]).toEqual([200, [1]]);
  });
});

describe("a server that stops", () => {
  test("ends every wait with 503 and refuses new ones", async () => {
    const own = await createTestContext();
    try {
      const t = await createTenant(own.sql);
      const call = () => own.app.handle(buildRequest("http://localhost:3000", "GET", "/api/events?after=now&wait=30", { token: t.token })).then(readResponse);
      const waiting = call();
      await eventually(() => own.services.eventWaiters.size() === 1, 5000, "the wait to register");
      own.services.eventWaiters.close();
      for (const res of [await waiting, await call()]) {
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("1");
        expectErrorShape(res.body, "unavailable");
      }
    } finally {
      await own.close();
    }
  }, 60_000);
});
