import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Redis from "ioredis";
import type Pusher from "pusher-js";
import { randomString } from "../../server/lib/crypto";
import { awaitCallback, type ConnectionDetails, connectPusher, subscribed } from "../e2e/realtime-client";
import { createApiKey, createTenant, createUser, TEST_PASSWORD } from "../fixtures";
import { freshDatabase } from "../helpers";
import {
  call,
  connect,
  createWorld,
  redisPrefix,
  type ServerProcess,
  sharedDatabaseUrl,
  smsOf,
  startRedis,
  startServer,
  startWebhookReceiver,
  until,
} from "./harness";

const wanted = Boolean(sharedDatabaseUrl && process.env.REDIS_URL);
if (!wanted) console.warn("faults/redis-outage: skipped (set DATABASE_URL and REDIS_URL: two instances need a shared PostgreSQL and Redis)");

describe.skipIf(!wanted)("Redis stopped under two instances", () => {
  let redis: Exclude<Awaited<ReturnType<typeof startRedis>>, string> | undefined;
  let prefix = "";
  let skipped = "";
  let sql: ReturnType<typeof connect>;
  const servers: ServerProcess[] = [];
  const clients: Pusher[] = [];
  const receiver = startWebhookReceiver();

  beforeAll(async () => {
    const r = await startRedis();
    if (typeof r === "string") {
      skipped = r;
      console.warn(`faults/redis-outage: skipped (${r})`);
      return;
    }
    redis = r;
    const databaseUrl = await freshDatabase(sharedDatabaseUrl!);
    sql = connect(databaseUrl);
    const env = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: r.url,
      REDIS_PREFIX: (prefix = redisPrefix()),
      PUSHER_APP_KEY: `key-${randomString(8)}`,
      PUSHER_APP_SECRET: randomString(24),
    };
    servers.push(await startServer(env));
    servers.push(await startServer(env));
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(servers.map((s) => s.kill()));
    await redis?.stop();
    receiver.down();
    await sql?.end();
  });

  test("health says cache failing, ingest and webhooks go on, events reach both instances through the log, fan-out resumes when Redis is back", async () => {
    if (skipped) return;
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const world = await createWorld(sql, () => a.url, receiver.url, { timeout_seconds: 5, retry_count: 10 });
    receiver.setSecret(world.secret);
    // One pusher-js client on each instance, on the organization's channel.
    const seen = [new Set<string>(), new Set<string>()];
    for (const [i, s] of [a, b].entries()) {
      const details = (await call(s.url, "GET", "/api/broadcasting/connection", { token: world.token })).body as ConnectionDetails;
      const pusher = connectPusher(s.url, details, world.token);
      clients.push(pusher);
      const channel = await subscribed(pusher, `private-organization.${world.org.id}`, 10_000);
      channel.bind("message.received", (e: { message?: { text?: string }; text?: string }) => seen[i]!.add(e.message?.text ?? e.text ?? ""));
    }
    const run = crypto.randomUUID();
    let n = 0;
    const submitBatch = async (count: number) => {
      const texts: string[] = [];
      for (let k = 0; k < count; k++) {
        const i = n++;
        const via = i % 2 === 0 ? a : b;
        const r = await call(via.url, "POST", `/api/byos/devices/${world.device.id}/sms`, { token: world.token, body: smsOf(run, i) });
        expect(r.status).toBe(202);
        texts.push(smsOf(run, i).body);
      }
      return texts;
    };

    const before = await submitBatch(4);
    await until("events on both instances with Redis up", () => before.every((t) => seen[0]!.has(t) && seen[1]!.has(t)), 15_000);

    await redis!.stop();
    for (const s of [a, b]) {
      const health = await until(`${s.port} to see Redis gone`, async () => {
        const h = await call(s.url, "GET", "/api/health");
        return h.status === 503 && h.body.checks.cache.status === "failing" ? h : null;
      });
      expect(health.body.status).toBe("degraded");
      expect(health.body.checks.database.status).toBe("ok");
    }
    const during = await submitBatch(6);
    // Every instance reads the event log itself: without Redis the events still reach both
    // instances' sockets (the tail's poll stands in for the lost wake-ups).
    await until("events on both instances without Redis", () => during.every((t) => seen[0]!.has(t) && seen[1]!.has(t)), 15_000);

    await redis!.start();
    for (const s of [a, b]) await until(`${s.port} healthy again`, async () => (await call(s.url, "GET", "/api/health")).status === 200, 20_000);
    // The subscriber connection resubscribes on reconnect; fan-out between instances resumes.
    await until(
      "fan-out between instances again",
      async () => {
        const after = await submitBatch(1);
        await until("both clients", () => seen[0]!.has(after[0]!) && seen[1]!.has(after[0]!), 3_000).catch(() => null);
        return seen[0]!.has(after[0]!) && seen[1]!.has(after[0]!);
      },
      20_000,
    );
    const ids = (await sql<{ id: number }[]>`select id from messages where device_id = ${world.device.id}`).map((r) => r.id);
    expect(ids.length).toBe(n);
    await until("every message delivered to the webhook", () => {
      const got = new Set(receiver.deliveries.map((d) => d.messageId));
      return ids.every((id) => got.has(id));
    });
    expect(servers.every((s) => !s.exited())).toBe(true);
  }, 90_000);

  /** A request's answer and how long it took. */
  const timed = async (...args: Parameters<typeof call>) => {
    const started = performance.now();
    const res = await call(...args);
    return { ...res, ms: performance.now() - started };
  };

  test("requests answer within a second without Redis, never 5xx: login, rate limits in-process, channel auth; a revocation made meanwhile ends B's socket during the outage", async () => {
    if (skipped) return;
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const { org, token } = await createTenant(sql);
    const user = await createUser(sql, { orgId: org.id, role: "member" });
    const key = await createApiKey(sql, org.id, []);
    const channelName = `private-organization.${org.id}`;
    const join = async (via: ServerProcess, t: string) => {
      const details = (await call(via.url, "GET", "/api/broadcasting/connection", { token: t })).body as ConnectionDetails;
      const pusher = connectPusher(via.url, details, t);
      clients.push(pusher);
      return { pusher, channel: await subscribed(pusher, channelName, 10_000) };
    };
    // Subscribed on B with the key before the outage.
    const byKey = await join(b, key.key);
    const keyEnded = awaitCallback(
      "B's key subscription to end",
      (done) => byKey.pusher.connection.bind("state_change", (st: { current: string }) => st.current === "disconnected" && done(undefined)),
      60_000,
    );

    await redis!.stop();
    await until("A to see Redis gone", async () => (await call(a.url, "GET", "/api/health")).body?.checks?.cache?.status === "failing");
    const login = (password: string) => timed(a.url, "POST", "/api/auth/login", { body: { email: user.email, password } });
    const right = await login(TEST_PASSWORD);
    expect(right.status).toBe(200);
    expect(right.ms).toBeLessThan(1000);
    const answers: { status: number; ms: number }[] = [];
    for (let k = 0; k < 11; k++) answers.push(await login("wrong password"));
    for (const w of answers) expect(w.ms).toBeLessThan(1000);
    // In-process counters: ten failures, then 429 (API.md §2), not a 500.
    expect(answers.map((w) => w.status)).toEqual([...Array(10).fill(401), 429]);

    // Channel auth and subscription on the same instance: the grant stays in its memory.
    const local = await timed(a.url, "POST", "/api/broadcasting/auth", { token, body: { socket_id: "1234.5678", channel_name: channelName } });
    expect(local.status).toBe(200);
    expect(local.ms).toBeLessThan(1000);
    await join(a, token);
    // Deleting the key on A: the bus cannot tell B while Redis is down, but the revocation log in
    // PostgreSQL does (server/auth/revocation-feed.ts), so B ends the subscription during the outage.
    const deleted = await timed(a.url, "DELETE", `/api/api-keys/${key.id}`, { token });
    expect(deleted.status).toBe(204);
    expect(deleted.ms).toBeLessThan(1000);
    await keyEnded;
    expect(byKey.channel.subscribed).toBe(false);

    await redis!.start();
    for (const s of [a, b]) await until(`${s.port} healthy again`, async () => (await call(s.url, "GET", "/api/health")).status === 200, 20_000);
    // Shared counters again: a failure lands in Redis.
    const other = await createUser(sql, { orgId: org.id, role: "member" });
    expect((await timed(b.url, "POST", "/api/auth/login", { body: { email: other.email, password: "wrong" } })).status).toBe(401);
    const client = new Redis(redis!.url);
    try {
      expect(await client.get(`${prefix}rl:login:email:${other.email.toLowerCase()}`)).toBe("1");
    } finally {
      client.disconnect();
    }
  }, 90_000);
});
