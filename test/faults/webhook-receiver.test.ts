import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freshDatabase } from "../helpers";
import { call, connect, createWorld, redisPrefix, type ServerProcess, sharedDatabaseUrl, smsOf, startServer, startWebhookReceiver, until } from "./harness";

const wanted = Boolean(sharedDatabaseUrl);
if (!wanted) console.warn("faults/webhook-receiver: skipped (set DATABASE_URL: the server process runs against real PostgreSQL)");

/**
 * The receiver misbehaving in every way in turn, against the real server process. The
 * integration tests cover each answer in-process; this one chains them on one delivery.
 */
describe.skipIf(!wanted)("webhook receiver down, failing, slow, throttling, gone", () => {
  let sql: ReturnType<typeof connect>;
  let server: ServerProcess;
  const receiver = startWebhookReceiver();

  beforeAll(async () => {
    const databaseUrl = await freshDatabase(sharedDatabaseUrl!);
    sql = connect(databaseUrl);
    server = await startServer({ DATABASE_URL: databaseUrl, REDIS_PREFIX: redisPrefix() });
  }, 60_000);
  afterAll(async () => {
    await server?.kill();
    receiver.down();
    await sql?.end();
  });

  const logs = async (token: string, id: number) =>
    (await call(server.url, "GET", `/api/webhook-integrations/${id}/logs?per_page=100`, { token })).body.data as any[];
  /** Makes the waiting retry due now instead of waiting out its exponential backoff. */
  const fastForward = (integrationId: number) => sql`
    update jobs set run_at = now() where queue = 'webhook.delivery'
      and (payload->>'delivery_id')::bigint in (select id from webhook_deliveries where webhook_integration_id = ${integrationId})`;

  test("refused, 500, timeout, 429 with Retry-After, then 200: one delivery, one webhook-id, each attempt logged", async () => {
    receiver.down();
    const world = await createWorld(sql, () => server.url, receiver.url, { timeout_seconds: 1, retry_count: 6 });
    receiver.setSecret(world.secret);
    const run = crypto.randomUUID();
    expect((await call(server.url, "POST", `/api/byos/devices/${world.device.id}/sms`, { token: world.token, body: smsOf(run, 0) })).status).toBe(202);
    const attempt = (n: number) =>
      until(`attempt ${n} logged`, async () => (await logs(world.token, world.integrationId)).find((l) => l.attempt === n), 15_000);

    const refused = await attempt(1);
    expect(refused.status).toBe("retrying");
    expect(refused.http_status).toBeNull();
    receiver.up();
    receiver.behave(async (_req, n) => {
      if (n === 1) return new Response("boom", { status: 500 });
      if (n === 2) {
        await Bun.sleep(2_500); // past timeout_seconds
        return new Response("late");
      }
      if (n === 3) return new Response("slow down", { status: 429, headers: { "retry-after": "1" } });
      return new Response("ok");
    });
    await fastForward(world.integrationId);
    expect((await attempt(2)).http_status).toBe(500);
    await fastForward(world.integrationId);
    const timedOut = await attempt(3);
    expect(timedOut.status).toBe("retrying");
    expect(timedOut.http_status).toBeNull();
    await fastForward(world.integrationId);
    const throttled = await attempt(4);
    expect(throttled.http_status).toBe(429);
    // Retry-After: 1 replaces the exponential backoff (attempt 4 would wait ~40 s).
    const wait = Date.parse(throttled.next_retry_at) - Date.parse(throttled.created_at);
    expect(wait).toBeGreaterThanOrEqual(900);
    expect(wait).toBeLessThan(3_000);
    const done = await attempt(5);
    expect(done.status).toBe("succeeded");
    // Every request of this delivery, the late one included, carried one webhook-id and verified.
    await until("the late answer recorded", () => receiver.attempts.length === 4, 5_000);
    expect(new Set(receiver.attempts.map((a) => a.id)).size).toBe(1);
    expect(receiver.attempts.every((a) => a.verified)).toBe(true);
    expect(receiver.attempts[0]!.id).toBe(done.event_id);
  }, 60_000);

  test("410 Gone disables the integration: later messages are not sent to it", async () => {
    receiver.behave(() => new Response("gone", { status: 410 }));
    const world = await createWorld(sql, () => server.url, receiver.url, { timeout_seconds: 1, retry_count: 6 });
    const run = crypto.randomUUID();
    const before = receiver.requests();
    expect((await call(server.url, "POST", `/api/byos/devices/${world.device.id}/sms`, { token: world.token, body: smsOf(run, 0) })).status).toBe(202);
    const gone = await until("the 410 logged", async () => (await logs(world.token, world.integrationId)).find((l) => l.http_status === 410));
    expect(gone.status).toBe("failed");
    const shown = await call(server.url, "GET", `/api/webhook-integrations/${world.integrationId}`, { token: world.token });
    expect(shown.body.data.is_active).toBe(false);
    expect((await call(server.url, "POST", `/api/byos/devices/${world.device.id}/sms`, { token: world.token, body: smsOf(run, 1) })).status).toBe(202);
    await until(
      "the second message processed",
      async () => (await sql<{ n: number }[]>`select count(*)::int as n from messages where device_id = ${world.device.id}`)[0]!.n === 2,
    );
    await until(
      "the fan-out job done",
      async () => (await sql<{ n: number }[]>`select count(*)::int as n from jobs where queue = 'message.inbound'`)[0]!.n === 0,
    );
    expect(receiver.requests() - before).toBe(1);
  }, 30_000);
});
