import { beforeAll, describe, expect, test } from "bun:test";
import { createJobQueue } from "../../server/jobs/queue";
import { createLogger } from "../../server/lib/logger";
import { removeExpired, retentionHandler, scheduleRetention } from "../../server/maintenance/retention";
import { createFakeClock } from "../fake-clock";
import { createTenant } from "../fixtures";
import { sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
});

describe("retention (hourly clean-up)", () => {
  test("old delivery logs and finished deliveries go, recent and unfinished ones stay; expired sessions go after a day", async () => {
    const t = await createTenant(ctx.sql);
    const [integration] = await ctx.sql<{ id: number }[]>`
      insert into webhook_integrations (organization_id, name, url, secret_sealed)
      values (${t.org.id}, 'retention', 'https://example.com/hook', 'sealed') returning id`;
    /** A delivery first attempted `daysAgo`, last `lastDaysAgo` (its retries ran on since). */
    const delivery = (status: string, daysAgo: number, lastDaysAgo = daysAgo) => ctx.sql<{ id: number }[]>`
      insert into webhook_deliveries (webhook_integration_id, event_id, event_type, body, status, created_at, updated_at)
      values (${integration!.id}, ${`evt_${crypto.randomUUID()}`}, 'message.received', '{}', ${status},
              now() - make_interval(days => ${daysAgo}), now() - make_interval(days => ${lastDaysAgo}))
      returning id`;
    const [oldDone] = await delivery("succeeded", 40);
    const [oldRetrying] = await delivery("retrying", 40);
    const [recent] = await delivery("failed", 2);
    // Begun 31 days ago, failed for good 29 days ago: kept with its last records (they are 29 days old).
    const [longRetried] = await delivery("failed", 31, 29);
    const log = (deliveryId: number | null, daysAgo: number) => ctx.sql<{ id: number }[]>`
      insert into webhook_delivery_logs (webhook_integration_id, delivery_id, event_id, event_type, attempt, status, created_at)
      values (${integration!.id}, ${deliveryId}, 'evt_x', 'webhook.test', 1, 'failed', now() - make_interval(days => ${daysAgo}))
      returning id`;
    const [oldLog] = await log(null, 31);
    const [recentLog] = await log(recent!.id, 29);
    const [lastOfLongRetried] = await log(longRetried!.id, 29);
    const [expired] = await ctx.sql<{ id: number }[]>`
      insert into sessions (user_id, token_hash, expires_at) values (${t.user.id}, ${Buffer.from(crypto.randomUUID())}, now() - interval '2 days') returning id`;
    const [justExpired] = await ctx.sql<{ id: number }[]>`
      insert into sessions (user_id, token_hash, expires_at) values (${t.user.id}, ${Buffer.from(crypto.randomUUID())}, now() - interval '1 hour') returning id`;
    const idempotencyKey = (key: string, hoursAgo: number) => ctx.sql`
      insert into idempotency_keys (organization_id, principal, key, fingerprint, created_at)
      values (${t.org.id}, 'user:1', ${key}, 'f', now() - make_interval(hours => ${hoursAgo}))`;
    await idempotencyKey("yesterday", 25);
    await idempotencyKey("today", 23);

    const removed = await removeExpired(ctx.sql, { logRetentionDays: 30 });
    expect(removed.deliveryLogs).toBeGreaterThanOrEqual(1);
    expect(removed.sessions).toBeGreaterThanOrEqual(1);

    const ids = async (table: "webhook_deliveries" | "webhook_delivery_logs" | "sessions", list: number[]) =>
      (await ctx.sql<{ id: number }[]>`select id from ${ctx.sql(table)} where id = any(${list}::bigint[]) order by id`).map((r) => r.id);
    expect(await ids("webhook_deliveries", [oldDone!.id, oldRetrying!.id, recent!.id, longRetried!.id])).toEqual([
      oldRetrying!.id,
      recent!.id,
      longRetried!.id,
    ]);
    expect(await ids("webhook_delivery_logs", [oldLog!.id, recentLog!.id, lastOfLongRetried!.id])).toEqual([recentLog!.id, lastOfLongRetried!.id]);
    expect(await ids("sessions", [expired!.id, justExpired!.id])).toEqual([justExpired!.id]);
    const keys = await ctx.sql<{ key: string }[]>`select key from idempotency_keys where organization_id = ${t.org.id}`;
    expect(keys.map((k) => k.key)).toEqual(["today"]);
    // The owner's own live session is untouched: the API still answers it.
    expect((await ctx.request("GET", "/api/me", { token: t.token })).status).toBe(200);
  });

  test("dead jobs go once dead for longer than LOG_RETENTION_DAYS; newer dead jobs and live ones stay", async () => {
    const job = (dead: boolean, daysAgo: number) => ctx.sql<{ id: number }[]>`
      insert into jobs (queue, payload, dead, attempts, run_at) values ('retention.test', '{}', ${dead}, 3, now() - make_interval(days => ${daysAgo})) returning id`;
    const [old] = await job(true, 31);
    const [recent] = await job(true, 29);
    const [waiting] = await job(false, 40);
    const removed = await removeExpired(ctx.sql, { logRetentionDays: 30 });
    expect(removed.deadJobs).toBeGreaterThanOrEqual(1);
    const left = await ctx.sql<{ id: number }[]>`select id from jobs where id = any(${[old!.id, recent!.id, waiting!.id]}::bigint[]) order by id`;
    expect(left.map((r) => r.id)).toEqual([recent!.id, waiting!.id]);
    await ctx.sql`delete from jobs where queue = 'retention.test'`;
  });

  test("events older than EVENT_RETENTION_DAYS go, in chunks; newer ones stay", async () => {
    const t = await createTenant(ctx.sql);
    const insert = (daysAgo: number, n: number) => ctx.sql`
      insert into events (organization_id, type, payload, created_at)
      select ${t.org.id}, 'config.changed', '{}'::jsonb, now() - make_interval(days => ${daysAgo}) from generate_series(1, ${n})`;
    await insert(8, 5_001); // more than one chunk of 5,000
    await insert(6, 3);
    const removed = await removeExpired(ctx.sql, { logRetentionDays: 30, eventRetentionDays: 7 });
    expect(removed.events).toBeGreaterThanOrEqual(5_001);
    const [left] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from events where organization_id = ${t.org.id}`;
    expect(left!.n).toBe(3);
    // The default keeps 30 days.
    expect((await removeExpired(ctx.sql, { logRetentionDays: 30 })).events).toBe(0);
    const [still] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from events where organization_id = ${t.org.id}`;
    expect(still!.n).toBe(3);
  });

  test("instances scheduling at start make one run per hour between them", async () => {
    const clock = createFakeClock(Date.parse("2031-05-05T10:20:00Z"));
    for (let instance = 0; instance < 3; instance++) {
      const jobs = createJobQueue({ sql: ctx.sql, logger: createLogger("silent"), workerId: `retention-${instance}`, clock });
      await scheduleRetention({ jobs, clock });
    }
    const queue = "maintenance.retention";
    const rows = await ctx.sql`select 1 from jobs where queue = ${queue} and dedupe_key = ${`${queue}:${Math.floor((clock.now() + 60_000) / 3_600_000)}`}`;
    expect(rows).toHaveLength(1);
    await ctx.sql`delete from jobs where queue = ${queue} and dedupe_key like ${`${queue}:%`} and run_at > now() + interval '1 year'`;
  });

  test("a run then vacuums the job queue and the tables it removed from", async () => {
    const t = await createTenant(ctx.sql);
    const [integration] = await ctx.sql<{ id: number }[]>`
      insert into webhook_integrations (organization_id, name, url, secret_sealed)
      values (${t.org.id}, 'retention vacuum', 'https://example.com/hook', 'sealed') returning id`;
    await ctx.sql`
      insert into webhook_delivery_logs (webhook_integration_id, event_id, event_type, attempt, status, created_at)
      values (${integration!.id}, 'evt_x', 'webhook.test', 1, 'failed', now() - interval '40 days')`;
    const vacuumed: string[][] = [];
    const clock = createFakeClock(Date.parse("2031-06-06T10:20:00Z"));
    const jobs = createJobQueue({ sql: ctx.sql, logger: createLogger("silent"), workerId: "retention-vacuum", clock });
    const run = retentionHandler({
      sql: ctx.sql,
      jobs,
      clock,
      logger: createLogger("silent"),
      logRetentionDays: 30,
      vacuum: async (tables) => void vacuumed.push([...tables]),
    });
    await run({ id: 0, queue: "maintenance.retention", payload: {}, attempts: 1, max_attempts: 10 } as never);
    // Other tests' expired rows may go in the same run; the queue and the logs always do.
    expect(vacuumed).toHaveLength(1);
    expect(vacuumed[0]!.slice(0, 2)).toEqual(["jobs", "webhook_delivery_logs"]);
    await ctx.sql`delete from jobs where queue = 'maintenance.retention' and run_at > now() + interval '1 year'`;
  });

  // On PostgreSQL `vacuum` is a no-op (autovacuum's work), with nothing to observe.
  test.skipIf(Boolean(process.env.DATABASE_URL))("the database's vacuum reclaims a churned queue on the embedded database", async () => {
    const queue = `vacuum-${crypto.randomUUID()}`;
    const size = async () =>
      (
        await ctx.sql<{ bytes: number; vacuums: number }[]>`
        select pg_relation_size('jobs')::int as bytes, coalesce((select vacuum_count::int from pg_stat_user_tables where relname = 'jobs'), 0) as vacuums`
      )[0]!;
    for (let i = 0; i < 5; i++) {
      await ctx.sql`insert into jobs (queue, payload) select ${queue}, '{}'::jsonb from generate_series(1, 1000)`;
      await ctx.sql`delete from jobs where queue = ${queue}`;
    }
    const before = await size();
    await ctx.services.db.vacuum(["jobs"]);
    const after = await size();
    expect(ctx.services.db.kind).toBe("embedded");
    expect(after.vacuums).toBe(before.vacuums + 1);
    expect(after.bytes).toBeLessThan(before.bytes);
  });
});
