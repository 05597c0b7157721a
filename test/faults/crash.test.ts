import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freshDatabase } from "../helpers";
import { connect, createWorld, redisPrefix, type ServerProcess, sharedDatabaseUrl, smsOf, startServer, startWebhookReceiver, until } from "./harness";

const enabled = Boolean(sharedDatabaseUrl);
if (!enabled) console.warn("faults/crash: skipped (set DATABASE_URL: a SIGKILLed server process needs a real PostgreSQL to come back to)");

describe.skipIf(!enabled)("server SIGKILLed during SMS ingest and webhook delivery", () => {
  let databaseUrl = "";
  let sql: ReturnType<typeof connect>;
  let server: ServerProcess | undefined;
  const receiver = startWebhookReceiver();
  const env = () => ({ DATABASE_URL: databaseUrl, REDIS_PREFIX: redisPrefix() });

  beforeAll(async () => {
    databaseUrl = await freshDatabase(sharedDatabaseUrl!);
    sql = connect(databaseUrl);
  });
  afterAll(async () => {
    await server?.kill();
    receiver.down();
    await sql?.end();
  });

  test("every 202 is stored once, every message is delivered with one stable webhook-id across the restarts", async () => {
    server = await startServer(env());
    const port = server.port;
    const world = await createWorld(sql, () => server!.url, receiver.url, { timeout_seconds: 5, retry_count: 10 });
    receiver.setSecret(world.secret);
    // A slow receiver keeps deliveries mid-attempt when the server dies.
    receiver.behave(async () => {
      await Bun.sleep(150);
      return new Response("ok");
    });

    const run = crypto.randomUUID();
    const total = 600;
    const acked = new Set<number>();
    const submit = async (i: number) => {
      try {
        const r = await world.ctx.request("POST", `/api/byos/devices/${world.device.id}/sms`, { token: world.token, body: smsOf(run, i) });
        if (r.status === 202) acked.add(i);
        else if (r.status !== 503) throw new Error(`unexpected ${r.status} ${r.text}`);
      } catch (e) {
        if (!/fetch|socket|connect|closed|reset|timed out|abort/i.test((e as Error).message)) throw e;
      }
    };
    // Kill 1: in the middle of a stream of submissions (50 in flight).
    let next = 0;
    const pump = async () => {
      while (next < total && !server!.exited()) await submit(next++);
    };
    const streams = Array.from({ length: 50 }, pump);
    await until("200 acknowledged SMS", () => acked.size >= 200, 30_000);
    await server.kill("SIGKILL");
    await Promise.all(streams);
    const ackedAtKill = new Set(acked);
    expect(ackedAtKill.size).toBeGreaterThanOrEqual(200);
    const [stored] = await sql<{ n: number }[]>`select count(*)::int as n from device_sms where device_id = ${world.device.id}`;
    expect(stored!.n).toBeGreaterThanOrEqual(ackedAtKill.size);

    // Restart; the client resends everything it has no 202 for, and some it has (lost answers look the same to it).
    server = await startServer(env(), port);
    const resend = Array.from({ length: total }, (_, i) => i).filter((i) => !acked.has(i) || i % 10 === 0);
    for (let at = 0; at < resend.length; at += 50) await Promise.all(resend.slice(at, at + 50).map(submit));
    expect(acked.size).toBe(total);

    // Kill 2: while deliveries are in flight at the slow receiver. Their answers come too late
    // to count, so those deliveries must be taken up again by the next instance (within a lease).
    await until("deliveries under way", () => receiver.deliveries.length >= 50, 30_000);
    receiver.behave(async () => {
      await Bun.sleep(1_000);
      return new Response("ok");
    });
    const sent = receiver.requests();
    await until("requests waiting at the receiver", () => receiver.requests() >= sent + 8, 10_000);
    await server.kill("SIGKILL");
    receiver.behave(() => new Response("ok"));
    server = await startServer(env(), port);

    await until(
      "every message processed",
      async () =>
        (await sql<{ n: number }[]>`select count(*)::int as n from device_sms where device_id = ${world.device.id} and message_row_id is not null`)[0]!.n ===
        total,
      30_000,
    );
    const [messages] = await sql<{ n: number; texts: number }[]>`
      select count(*)::int as n, count(distinct text)::int as texts from messages where device_id = ${world.device.id}`;
    expect(messages).toEqual({ n: total, texts: total });
    const ids = (await sql<{ id: number }[]>`select id from messages where device_id = ${world.device.id}`).map((r) => r.id);
    await until(
      "a delivery of every message",
      () => {
        const got = new Set(receiver.deliveries.map((d) => d.messageId));
        return ids.every((id) => got.has(id));
      },
      45_000,
    );
    // At least once, and every copy of one message carries the same webhook-id, signed right.
    const byMessage = new Map<number, Set<string>>();
    for (const d of receiver.deliveries) {
      expect(d.verified).toBe(true);
      const set = byMessage.get(d.messageId!) ?? new Set();
      set.add(d.id);
      byMessage.set(d.messageId!, set);
    }
    for (const id of ids) expect(byMessage.get(id)!.size).toBe(1);
    expect(byMessage.size).toBe(total);
  }, 120_000);
});
