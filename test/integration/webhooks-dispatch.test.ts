import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DISPATCH_TIMING } from "../../server/webhooks/dispatcher";
import { ENDPOINT_CONCURRENCY } from "../../server/webhooks/engine";
import { createTenant } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import { createHook, createNumber, createTeam, deliveriesMade, fastForwardRetries, logsOf, receiveSms, startReceiver, waitFor } from "./webhooks-helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  ctx.services.start();
}, 60_000);
afterAll(async () => {
  await ctx?.close();
}, 60_000);

/** A receiver that holds every request until `release()`, and answers at once from then on. */
function hangingReceiver() {
  const held: Array<() => void> = [];
  let released = false;
  const receiver = startReceiver(() => (released ? new Response("ok") : new Promise<Response>((resolve) => held.push(() => resolve(new Response("late"))))));
  return {
    ...receiver,
    held,
    release() {
      released = true;
      for (const r of held.splice(0)) r();
    },
  };
}

/**
 * An integration's deliveries (one per event: a first attempt that succeeded is its log record
 * alone, anything else a delivery row), how many were attempted (have a log record), and the jobs
 * of its delivery rows not held by a worker.
 */
async function deliveryState(integrationId: number) {
  const [row] = await ctx.sql<{ deliveries: number; attempted: number; jobs_free: number }[]>`
    select
      (select count(*)::int from (
        select event_id from webhook_delivery_logs where webhook_integration_id = ${integrationId}
        union select event_id from webhook_deliveries where webhook_integration_id = ${integrationId}) e) as deliveries,
      (select count(distinct event_id)::int from webhook_delivery_logs where webhook_integration_id = ${integrationId} and attempt > 0) as attempted,
      (select count(*)::int from webhook_deliveries d join jobs j on j.queue = 'webhook.delivery' and (j.payload->>'delivery_id')::bigint = d.id
        where d.webhook_integration_id = ${integrationId} and j.locked_by is null) as jobs_free`;
  return row!;
}

/**
 * An integration whose endpoint hangs, with every one of its slots taken and 10 more deliveries
 * waiting in its lane (SMS texts `<label> 0`, `<label> 1`, ...).
 */
async function saturatedEndpoint(label: string) {
  const a = await createTenant(ctx.sql);
  const team = await createTeam(ctx.sql, a.org.id);
  const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }]);
  const slow = hangingReceiver();
  const hook = await createHook(ctx, a.token, { url: slow.url }, [{ teamId: team.id, mode: "always" }]);
  slow.secrets.push(hook.secret);
  const n = ENDPOINT_CONCURRENCY + 10;
  for (let i = 0; i < n; i++) await receiveSms(ctx, sim.id, `${label} ${i}`);
  await waitFor(() => slow.held.length === ENDPOINT_CONCURRENCY, 10_000, "the endpoint's slots all taken");
  await waitFor(() => ctx.services.webhooks.backlog().get(hook.id) === n, 10_000, "every delivery in the endpoint's lane");
  return { a, hook, slow, n };
}

describe("live deliveries run per endpoint in the process (dispatcher)", () => {
  test("a hung endpoint and a failing one never delay a healthy one: it receives everything while the hung one is stuck", async () => {
    const a = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }]);
    const hung = hangingReceiver();
    const failing = startReceiver(() => new Response("down", { status: 500 }));
    const healthy = startReceiver();
    const mapping = [{ teamId: team.id, mode: "always" as const }];
    const hungHook = await createHook(ctx, a.token, { url: hung.url, timeout_seconds: 60 }, mapping);
    const failingHook = await createHook(ctx, a.token, { url: failing.url, retry_count: 3 }, mapping);
    const healthyHook = await createHook(ctx, a.token, { url: healthy.url }, mapping);
    healthy.secrets.push(healthyHook.secret);

    const n = ENDPOINT_CONCURRENCY * 3;
    for (let i = 0; i < n; i++) await receiveSms(ctx, sim.id, `iso ${i}`);
    await waitFor(() => healthy.received.length === n, 20_000, "every healthy delivery");
    // The hung endpoint is still stuck at that moment: all of its slots taken, nothing answered.
    expect(hung.held.length).toBe(ENDPOINT_CONCURRENCY);
    expect(healthy.received.every((r) => r.verifiedWith === healthyHook.secret)).toBe(true);
    expect(new Set(healthy.received.map((r) => r.event.data.text)).size).toBe(n);
    const logs = await waitFor(async () => {
      const l = await logsOf(ctx, a.token, healthyHook.id, "?per_page=100");
      return l.data.length === n && l;
    });
    // Each healthy delivery took one attempt: no waiting counted as a failure.
    expect(logs.data.every((l) => l.status === "succeeded" && l.attempt === 1)).toBe(true);
    await waitFor(async () => (await logsOf(ctx, a.token, failingHook.id)).data.length >= ENDPOINT_CONCURRENCY, 20_000, "failed first attempts");

    await ctx.request("PATCH", `/api/webhook-integrations/${hungHook.id}`, { token: a.token, body: { name: "hung", url: hung.url, is_active: false } });
    await ctx.request("PATCH", `/api/webhook-integrations/${failingHook.id}`, {
      token: a.token,
      body: { name: "failing", url: failing.url, is_active: false },
    });
    hung.release();
    await waitFor(
      async () => {
        hung.release();
        return (await deliveryState(hungHook.id)).attempted === n;
      },
      20_000,
      "the hung endpoint's deliveries settled",
    );
    hung.stop();
    failing.stop();
    healthy.stop();
  }, 60_000);

  test("deliveries waiting in a lane are made as the integration is now: a new URL and secret reach them, a deletion ends them unrecorded", async () => {
    const { a, hook, slow, n } = await saturatedEndpoint("moved");
    const moved = startReceiver();
    const patched = await ctx.request("PATCH", `/api/webhook-integrations/${hook.id}`, { token: a.token, body: { name: "moved", url: moved.url } });
    expect(patched.status).toBe(200);
    const secret = (await ctx.request("POST", `/api/webhook-integrations/${hook.id}/regenerate-secret`, { token: a.token })).body.data.secret;
    moved.secrets.push(secret);
    // What a lane holds is read again once older than this bound (the design's, not a wait for an event).
    await Bun.sleep(DISPATCH_TIMING.configMaxAgeMs + 100);
    slow.release();
    await waitFor(() => moved.received.length === n - ENDPOINT_CONCURRENCY, 10_000, "the waiting deliveries at the new URL");
    expect(slow.received.length).toBe(ENDPOINT_CONCURRENCY);
    expect(moved.received.every((r) => r.verifiedWith === secret)).toBe(true);
    slow.stop();
    moved.stop();

    const gone = await saturatedEndpoint("deleted");
    expect((await ctx.request("DELETE", `/api/webhook-integrations/${gone.hook.id}`, { token: gone.a.token })).status).toBe(200);
    await Bun.sleep(DISPATCH_TIMING.configMaxAgeMs + 100);
    gone.slow.release();
    await deliveriesMade(ctx);
    expect(gone.slow.received.length).toBe(ENDPOINT_CONCURRENCY);
    gone.slow.stop();
  });

  test("an integration deleted with attempts under way: nothing blocks the records of other organizations' deliveries or the consumer's position", async () => {
    const { a, hook, slow } = await saturatedEndpoint("poison");
    const b = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, b.org.id);
    const sim = await createNumber(ctx.sql, [{ orgId: b.org.id, teamId: team.id }]);
    const healthy = startReceiver();
    const theirs = await createHook(ctx, b.token, { url: healthy.url }, [{ teamId: team.id, mode: "always" }]);
    expect((await ctx.request("DELETE", `/api/webhook-integrations/${hook.id}`, { token: a.token })).status).toBe(200);
    // The deleted integration's attempts under way end now, their outcomes recorded beside B's.
    slow.release();
    for (let i = 0; i < 3; i++) await receiveSms(ctx, sim.id, `after the deletion ${i}`);
    await deliveriesMade(ctx);
    expect(healthy.received.map((r) => r.event.type)).toEqual(["message.received", "message.received", "message.received"]);
    expect((await logsOf(ctx, b.token, theirs.id)).data.length).toBe(3);
    expect(await ctx.sql`select 1 from webhook_delivery_logs where webhook_integration_id = ${hook.id}`).toHaveLength(0);
    slow.stop();
    healthy.stop();
  });

  test("waiting for an endpoint's slot is not an attempt: nothing stored (no delivery row, log record or job) until its turn", async () => {
    const { a, hook, slow, n } = await saturatedEndpoint("slot");
    // The first attempts in flight and those waiting for a slot are in memory only.
    expect(await deliveryState(hook.id)).toEqual({ deliveries: 0, attempted: 0, jobs_free: 0 });
    expect((await logsOf(ctx, a.token, hook.id)).data).toHaveLength(0);
    expect(slow.held.length).toBe(ENDPOINT_CONCURRENCY);

    await waitFor(
      () => {
        slow.release();
        return slow.received.length === n;
      },
      20_000,
      "every delivery once its turn came",
    );
    const logs = await waitFor(async () => {
      const l = await logsOf(ctx, a.token, hook.id, "?per_page=100");
      return l.data.length === n && l;
    });
    expect(logs.data.every((l) => l.status === "succeeded" && l.attempt === 1)).toBe(true);
    expect(new Set(slow.received.map((r) => r.headers["webhook-id"])).size).toBe(n);
    // Each is recorded once answered, succeeded at its first attempt: its log record, no delivery row, no job.
    await deliveriesMade(ctx);
    expect(await deliveryState(hook.id)).toEqual({ deliveries: n, attempted: n, jobs_free: 0 });
    expect(await ctx.sql`select 1 from webhook_deliveries where webhook_integration_id = ${hook.id}`).toHaveLength(0);
    slow.stop();
  }, 60_000);

  test("an event that fails every time gives up after its retries (logged as failed) and never stalls the consumer", async () => {
    const a = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }]);
    // Request n is received[n - 1] (recorded before it is answered).
    const receiver = startReceiver((n) => (receiver.received[n - 1]!.event.data.text === "poison" ? new Response("no", { status: 500 }) : new Response("ok")));
    const hook = await createHook(ctx, a.token, { url: receiver.url, retry_count: 2 }, [{ teamId: team.id, mode: "always" }]);
    receiver.secrets.push(hook.secret);
    await receiveSms(ctx, sim.id, "poison");
    for (let i = 0; i < 5; i++) await receiveSms(ctx, sim.id, `after ${i}`);
    // The events after the failing one are read and delivered while it waits for its retries.
    await waitFor(() => receiver.received.filter((r) => r.event.data.text.startsWith("after")).length === 5, 10_000, "later events delivered");
    await deliveriesMade(ctx);
    for (let attempt = 2; attempt <= 3; attempt++) {
      await waitFor(async () => (await logsOf(ctx, a.token, hook.id, "?status=retrying")).data.length === attempt - 1, 10_000, `attempt ${attempt - 1} logged`);
      await fastForwardRetries(ctx, hook.id);
    }
    const failed = await waitFor(async () => (await logsOf(ctx, a.token, hook.id, "?status=failed")).data[0], 10_000, "given up");
    expect(failed).toMatchObject({ attempt: 3, http_status: 500 });
    const [poison] = await ctx.sql<{ status: string; jobs: number }[]>`
      select d.status, (select count(*)::int from jobs j where (j.payload->>'delivery_id')::bigint = d.id) as jobs
      from webhook_deliveries d where d.webhook_integration_id = ${hook.id} and d.body like '%poison%'`;
    expect(poison).toEqual({ status: "failed", jobs: 0 });
    expect(receiver.received.filter((r) => r.event.data.text === "poison")).toHaveLength(3);
    receiver.stop();
  }, 60_000);
  test("stopping hands the waiting first attempts to the job queue, records those under way, and writes the position past them all", async () => {
    const { hook, slow, n } = await saturatedEndpoint("stop");

    const stopped = ctx.services.webhooks.stop();
    // The 10 waiting are stored untried with a job each, while the 16 under way are still held.
    await waitFor(async () => (await deliveryState(hook.id)).deliveries === n - ENDPOINT_CONCURRENCY, 10_000, "the waiting handed over");
    const [handed] = await ctx.sql<{ untried: number; jobs: number }[]>`
      select count(*) filter (where d.attempts = 0 and d.status = 'pending')::int as untried, count(j.id)::int as jobs
      from webhook_deliveries d left join jobs j on j.queue = 'webhook.delivery' and (j.payload->>'delivery_id')::bigint = d.id
      where d.webhook_integration_id = ${hook.id}`;
    expect(handed).toEqual({ untried: n - ENDPOINT_CONCURRENCY, jobs: n - ENDPOINT_CONCURRENCY });
    slow.release();
    await stopped;
    // The attempts under way were recorded before stop returned (the job path may have tried some of the others meanwhile).
    const after = await deliveryState(hook.id);
    expect(after.deliveries).toBe(n);
    expect(after.attempted).toBeGreaterThanOrEqual(ENDPOINT_CONCURRENCY);
    // Every event's deliveries are recorded: the position is past the last one, and nobody owns it.
    const [c] = await ctx.sql<{ owner: string | null; behind: boolean }[]>`
      select owner, exists (select 1 from events e where (e.txid, e.id) > (c.after_txid, c.after_id)) as behind
      from event_consumers c where name = 'webhooks'`;
    expect(c).toEqual({ owner: null, behind: false });

    await ctx.services.webhooks.start();
    await waitFor(
      () => {
        slow.release();
        return new Set(slow.received.map((r) => r.event.data.text)).size === n;
      },
      20_000,
      "the handed-over ones delivered by the job path",
    );
    await waitFor(async () => (await deliveryState(hook.id)).attempted === n, 10_000, "every delivery attempted once recorded");
    slow.stop();
  }, 60_000);
});
