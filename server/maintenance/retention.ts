import type { Database, Pool, Sql } from "../db/client";
import { deleteEventsBefore } from "../events/log";
import { removeDeadJobsBefore } from "../jobs/dead-jobs";
import { type JobHandler, type JobQueue, QUEUE_TABLE } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/logger";

const HOUR_MS = 3_600_000;
/** Rows removed per statement, so a large backlog never holds long locks or one huge transaction. */
const CHUNK = 5_000;

export type Removed = {
  deliveryLogs: number;
  deliveries: number;
  sessions: number;
  authorizationCodes: number;
  refreshTokens: number;
  idempotencyKeys: number;
  events: number;
  deadJobs: number;
};

const DAY_MS = 86_400_000;

/** Runs `remove` (a delete of at most CHUNK rows answering their count) until it removes less. */
async function inChunks(remove: () => Promise<number>) {
  let total = 0;
  for (;;) {
    const n = await remove();
    total += n;
    if (n < CHUNK) return total;
  }
}

/** Rows a delete removed. */
const deleted = async (q: PromiseLike<{ count: number }>) => (await q).count;

/**
 * Removes what nobody can use any more:
 * - webhook delivery log records older than `logRetentionDays`, and finished deliveries (their
 *   frozen event bodies) last attempted longer ago than that (by their first attempt, a delivery
 *   retried for hours took its last log records with it early: they cascade); walked from the
 *   oldest id, so no index on the time columns is needed;
 * - sessions and OAuth access tokens expired for more than a day (a day of grace keeps the
 *   answer to a just-expired token "expired", not merely "unknown", in logs and tests);
 * - OAuth authorization codes and refresh tokens expired for more than a day (a rotated refresh
 *   token is kept until then: presenting it again still revokes its family);
 * - Idempotency-Key records older than their 24 h window (server/lib/idempotency.ts);
 * - events of the log older than `eventRetentionDays` (EVENT_RETENTION_DAYS): a cursor before a
 *   removed event answers 410 cursor_expired (events/log.ts `deleteEventsBefore` moves the horizon);
 * - dead jobs that died more than `logRetentionDays` ago (jobs/dead-jobs.ts: an operator had that
 *   long to retry or discard them; `simhost_queue_dead` counted them meanwhile).
 */
export async function removeExpired(sql: Sql, o: { logRetentionDays: number; eventRetentionDays?: number; now?: number }): Promise<Removed> {
  const cutoff = sql`now() - make_interval(days => ${o.logRetentionDays})`;
  const deliveryLogs = await inChunks(() =>
    deleted(sql`
      delete from webhook_delivery_logs where id in (
        select id from webhook_delivery_logs where created_at < ${cutoff} order by id limit ${CHUNK})`),
  );
  const deliveries = await inChunks(() =>
    deleted(sql`
      delete from webhook_deliveries where id in (
        select id from webhook_deliveries where updated_at < ${cutoff} and status in ('succeeded', 'failed') order by id limit ${CHUNK})`),
  );
  const sessions = await inChunks(() =>
    deleted(sql`
      delete from sessions where id in (select id from sessions where expires_at < now() - interval '1 day' limit ${CHUNK})`),
  );
  const authorizationCodes = await inChunks(() =>
    deleted(sql`
      delete from oauth_authorization_codes where id in (
        select id from oauth_authorization_codes where expires_at < now() - interval '1 day' limit ${CHUNK})`),
  );
  const refreshTokens = await inChunks(() =>
    deleted(sql`
      delete from oauth_refresh_tokens where id in (
        select id from oauth_refresh_tokens where expires_at < now() - interval '1 day' limit ${CHUNK})`),
  );
  const idempotencyKeys = await inChunks(() =>
    deleted(sql`
      delete from idempotency_keys where ctid in (
        select ctid from idempotency_keys where created_at < now() - interval '24 hours' limit ${CHUNK})`),
  );
  const now = o.now ?? Date.now();
  const eventsBefore = new Date(now - (o.eventRetentionDays ?? 30) * DAY_MS);
  const events = await inChunks(() => deleteEventsBefore(sql, eventsBefore, CHUNK));
  const deadBefore = new Date(now - o.logRetentionDays * DAY_MS);
  const deadJobs = await inChunks(() => removeDeadJobsBefore(sql, deadBefore, CHUNK));
  return { deliveryLogs, deliveries, sessions, authorizationCodes, refreshTokens, idempotencyKeys, events, deadJobs };
}

/** The next hour's run, once however many instances ask (the dedupe key names the hour). */
function enqueueNext(jobs: JobQueue, now: number, delayMs: number) {
  const at = now + delayMs;
  // One job per hour across instances: the dedupe key names the hour.
  return jobs.enqueue("maintenance.retention", {}, { delayMs, dedupeKey: `maintenance.retention:${Math.floor(at / HOUR_MS)}` });
}

/** The tables each count of `Removed` is removed from. */
const TABLES: Record<keyof Removed, string> = {
  deliveryLogs: "webhook_delivery_logs",
  deliveries: "webhook_deliveries",
  sessions: "sessions",
  authorizationCodes: "oauth_authorization_codes",
  refreshTokens: "oauth_refresh_tokens",
  idempotencyKeys: "idempotency_keys",
  events: "events",
  deadJobs: QUEUE_TABLE,
};

type RetentionDeps = {
  sql: Pool;
  jobs: JobQueue;
  clock: Clock;
  logger: Logger;
  logRetentionDays: number;
  eventRetentionDays?: number;
  /** The database's `vacuum` (server/db/client.ts): the embedded database has no autovacuum. */
  vacuum?: Database["vacuum"];
};

/**
 * The handler of the clean-up (registered by server/jobs/workers.ts): schedules the next hour's
 * run, removes, then vacuums the job queue and the tables it removed from (a no-op on PostgreSQL,
 * where autovacuum does it).
 */
export function retentionHandler(deps: RetentionDeps): JobHandler {
  return async () => {
    // The next run first: a run that keeps failing must not end the hourly chain.
    const now = deps.clock.now();
    await enqueueNext(deps.jobs, now, HOUR_MS);
    const removed = await removeExpired(deps.sql, { logRetentionDays: deps.logRetentionDays, eventRetentionDays: deps.eventRetentionDays, now });
    if (Object.values(removed).some((n) => n > 0)) deps.logger.info({ removed }, "expired records removed");
    // Then the space of what went, and of the finished jobs, where no autovacuum reclaims it.
    const emptied = (Object.keys(TABLES) as (keyof Removed)[]).filter((k) => removed[k] > 0).map((k) => TABLES[k]);
    await deps.vacuum?.([...new Set([QUEUE_TABLE, ...emptied])]);
  };
}

/** At start: makes sure a run is due within the hour. */
export const scheduleRetention = (deps: Pick<RetentionDeps, "jobs" | "clock">) => enqueueNext(deps.jobs, deps.clock.now(), 60_000);
