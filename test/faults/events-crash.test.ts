import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type Pusher from "pusher-js";
import { encodeCursor } from "../../server/events/cursor";
import { randomString } from "../../server/lib/crypto";
import { type ConnectionDetails, connectPusher, subscribed } from "../e2e/realtime-client";
import { freshDatabase } from "../helpers";
import { call, connect, createWorld, redisPrefix, type ServerProcess, sharedDatabaseUrl, smsOf, startServer, startWebhookReceiver, until } from "./harness";

const enabled = Boolean(sharedDatabaseUrl);
if (!enabled) console.warn("faults/events-crash: skipped (set DATABASE_URL: a SIGKILLed server process needs a real PostgreSQL to come back to)");

/**
 * The transactional outbox through SIGKILL: an SMS accepted (202) by a server that is killed
 * before anything announced it still becomes exactly one `message.received` row per organization
 * once a server runs the jobs again, and reaches a pusher-js client with that row's cursor.
 */
describe.skipIf(!enabled)("events survive a SIGKILL between the change and its announcement", () => {
  let sql: ReturnType<typeof connect>;
  const servers: ServerProcess[] = [];
  const clients: Pusher[] = [];
  const receiver = startWebhookReceiver();
  let env: Record<string, string>;

  beforeAll(async () => {
    const databaseUrl = await freshDatabase(sharedDatabaseUrl!);
    sql = connect(databaseUrl);
    env = { DATABASE_URL: databaseUrl, REDIS_PREFIX: redisPrefix(), PUSHER_APP_KEY: `key-${randomString(8)}`, PUSHER_APP_SECRET: randomString(24) };
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(servers.map((s) => s.kill()));
    receiver.down();
    await sql?.end();
  });

  test("accepted, killed before processing, restarted: the event is appended once and delivered", async () => {
    // An API-only instance (no job workers): the SMS is stored with its processing job, nothing more.
    const first = await startServer({ ...env, WORKERS: "0" });
    servers.push(first);
    let base = first.url;
    const world = await createWorld(sql, () => base, receiver.url);
    const sms = smsOf(crypto.randomUUID(), 1);
    expect((await call(first.url, "POST", `/api/byos/devices/${world.device.id}/sms`, { token: world.token, body: sms })).status).toBe(202);
    await first.kill("SIGKILL");
    const rows = () => sql<{ id: number; txid: string; payload: { message: { text: string } } }[]>`
      select id, txid::text as txid, payload from events where organization_id = ${world.org.id} and type = 'message.received'`;
    expect(await rows()).toHaveLength(0);

    // Back up (still without workers), with a client listening on it.
    const api = await startServer({ ...env, WORKERS: "0" }, first.port);
    servers.push(api);
    base = api.url;
    const details = (await call(api.url, "GET", "/api/broadcasting/connection", { token: world.token })).body as ConnectionDetails;
    const pusher = connectPusher(api.url, details, world.token);
    clients.push(pusher);
    const channel = await subscribed(pusher, `private-organization.${world.org.id}`, 10_000);
    const seen: { message: { text: string }; event_id: string }[] = [];
    channel.bind("message.received", (e: (typeof seen)[number]) => seen.push(e));

    // A worker instance runs the jobs the dead one left: processing stores the message and appends its event in one transaction, every instance's tail delivers.
    servers.push(await startServer(env));
    const got = await until("the event on the client", () => seen.find((e) => e.message.text === sms.body), 30_000);
    const stored = await rows();
    expect(stored).toHaveLength(1);
    expect(got.event_id).toBe(encodeCursor({ txid: stored[0]!.txid, id: stored[0]!.id }));
    expect(seen.filter((e) => e.message.text === sms.body)).toHaveLength(1);
  }, 120_000);
});
