import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectErrorShape } from "../helpers";
import {
  call,
  connect,
  createWorld,
  redisPrefix,
  type ServerProcess,
  sharedDatabaseUrl,
  smsOf,
  startPostgresCluster,
  startServer,
  startWebhookReceiver,
  until,
} from "./harness";

const OUTAGE_MS = 10_000;
const wanted = Boolean(sharedDatabaseUrl);
if (!wanted) console.warn("faults/postgres-outage: skipped (set DATABASE_URL: the suite runs against real PostgreSQL)");

const t0 = Date.now();
const step = async <T>(what: string, ok: () => T | Promise<T>, ms?: number) => {
  const r = await until(what, ok, ms);
  if (process.env.FAULTS_VERBOSE) console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
  return r;
};

describe.skipIf(!wanted)("PostgreSQL stopped for 10 s under load", () => {
  let cluster: Exclude<Awaited<ReturnType<typeof startPostgresCluster>>, string> | undefined;
  let skipped = "";
  let server: ServerProcess | undefined;
  let sql: ReturnType<typeof connect>;
  const receiver = startWebhookReceiver();

  beforeAll(async () => {
    const c = await startPostgresCluster();
    if (typeof c === "string") {
      skipped = c;
      console.warn(`faults/postgres-outage: skipped (${c})`);
      return;
    }
    cluster = c;
    sql = connect(c.url);
  }, 60_000);
  afterAll(async () => {
    if (process.env.FAULTS_VERBOSE) console.log(`server exited: ${server?.exited()} ${server?.proc.exitCode}\n${server?.output().slice(-6000)}`);
    await server?.kill();
    receiver.down();
    await sql?.end({ timeout: 1 });
    await cluster?.destroy();
  });

  test("503 unavailable during the outage, health 503, the process lives, recovers alone; resending devices lose nothing", async () => {
    if (skipped) return;
    server = await startServer({ DATABASE_URL: cluster!.url, REDIS_PREFIX: redisPrefix() });
    const world = await createWorld(sql, () => server!.url, receiver.url, { timeout_seconds: 5, retry_count: 10 });
    receiver.setSecret(world.secret);
    await sql.end({ timeout: 1 });

    // Devices with an outbox: each SMS is resent until it gets its 202.
    const run = crypto.randomUUID();
    const pending = new Set<number>();
    const acked = new Set<number>();
    const statuses = new Map<number, number>();
    const bodies503: unknown[] = [];
    let produced = 0;
    let producing = true;
    const device = async () => {
      while (producing || pending.size > 0) {
        let i: number | undefined = pending.values().next().value;
        if (i === undefined) {
          if (!producing) return;
          i = produced++;
        }
        pending.add(i);
        try {
          const r = await world.ctx.request("POST", `/api/byos/devices/${world.device.id}/sms`, { token: world.token, body: smsOf(run, i) });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 202) {
            pending.delete(i);
            acked.add(i);
            continue;
          }
          if (r.status === 503) bodies503.push(r.body);
          // The server's last words say why (a CI run once saw a 401 here, not reproduced since).
          else throw new Error(`unexpected answer ${r.status} at ${((Date.now() - t0) / 1000).toFixed(1)} s: ${r.text}\n${server?.output().slice(-4000)}`);
        } catch (e) {
          if ((e as Error).message.startsWith("unexpected answer")) throw e;
        }
        await Bun.sleep(200); // the outbox's backoff
      }
    };
    const devices = Array.from({ length: 8 }, device);
    await step("load flowing", () => acked.size >= 50, 20_000);

    await cluster!.stop();
    const outageEnds = Date.now() + OUTAGE_MS;
    const health = await call(server.url, "GET", "/api/health");
    expect(health.status).toBe(503);
    expect(health.body.status).toBe("down");
    expect(health.body.checks.database.status).toBe("failing");
    // Callers are cached for a few seconds, so /api/me may still answer; a list reads the database.
    const list = await call(server.url, "GET", "/api/byos/devices", { token: world.token });
    expect(list.status).toBe(503);
    expectErrorShape(list.body, "unavailable");
    await step("SMS refused with 503 during the outage", () => bodies503.length > 0, OUTAGE_MS);
    for (const b of bodies503) expectErrorShape(b, "unavailable");
    await Bun.sleep(Math.max(0, outageEnds - Date.now())); // hold the outage open
    expect(server.exited()).toBe(false);
    await cluster!.start();

    await step("health back to 200", async () => (await call(server!.url, "GET", "/api/health")).status === 200, 30_000);
    producing = false;
    await Promise.all(devices);
    expect(server.exited()).toBe(false);
    expect(acked.size).toBe(produced);

    sql = connect(cluster!.url);
    await until(
      "every SMS stored once and processed",
      async () => {
        const [row] = await sql<{ n: number; done: number }[]>`
          select count(*)::int as n, count(message_row_id)::int as done from device_sms where device_id = ${world.device.id}`;
        return row!.n === produced && row!.done === produced;
      },
      30_000,
    ).catch(async (e) => {
      const [row] = await sql<{ n: number; done: number }[]>`
        select count(*)::int as n, count(message_row_id)::int as done from device_sms where device_id = ${world.device.id}`;
      const jobs = await sql`select id, queue, attempts, dead, run_at, locked_until, last_error from jobs`;
      throw new Error(`${(e as Error).message}: produced ${produced}, stored ${row!.n}, processed ${row!.done}, jobs ${JSON.stringify(jobs)}`);
    });
    const [m] = await sql<{ n: number; texts: number }[]>`
      select count(*)::int as n, count(distinct text)::int as texts from messages where device_id = ${world.device.id}`;
    expect(m).toEqual({ n: produced, texts: produced });
    const ids = (await sql<{ id: number }[]>`select id from messages where device_id = ${world.device.id}`).map((r) => r.id);
    await step(
      "every message delivered to the webhook",
      () => {
        const got = new Set(receiver.deliveries.map((d) => d.messageId));
        return ids.every((id) => got.has(id));
      },
      30_000,
    );
    expect(statuses.get(503) ?? 0).toBeGreaterThan(0);
    if (process.env.FAULTS_VERBOSE) console.log(server.output().slice(-5000));
  }, 120_000);
});
