import type { Sql } from "../db/client";

/**
 * The operator's view of the job queue (`simhost admin jobs`, through server/admin/operations.ts):
 * what waits per queue, and the dead jobs (given up after their last attempt, or by GiveUp),
 * which the queue keeps for inspection and never runs again by itself: work that was
 * acknowledged (an SMS a phone submitted, a scheduled send) and did not happen. An operator
 * who fixed the cause retries them; one who judged them void discards them; the hourly clean-up
 * removes those dead for longer than WEBHOOK_LOG_RETENTION_DAYS (`removeDeadJobsBefore`).
 */

export type QueueCounts = { queue: string; waiting: number; running: number; dead: number; oldest_due_seconds: number | null };

export type DeadJob = {
  id: number;
  queue: string;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  /** When its last attempt failed (its `run_at`, set then). */
  died_at: Date;
  payload: Record<string, unknown>;
};

/** Which dead jobs a retry or discard takes: some ids, or every one of a queue, or every one. */
export type DeadJobSelection = { ids: number[] } | { queue: string } | { all: true };

/** Jobs per queue: waiting (due or not), running (claimed under a live lease), dead; how long the oldest due one has waited. */
export async function countJobs(sql: Sql): Promise<QueueCounts[]> {
  return sql<QueueCounts[]>`
    select queue,
      count(*) filter (where not dead and (locked_until is null or locked_until < now()))::int as waiting,
      count(*) filter (where not dead and locked_until >= now())::int as running,
      count(*) filter (where dead)::int as dead,
      extract(epoch from now() - min(run_at) filter (where not dead and run_at <= now() and (locked_until is null or locked_until < now())))::float8 as oldest_due_seconds
    from jobs group by queue order by queue`;
}

/** The dead jobs, oldest first, optionally of one queue; at most `limit`. */
export async function listDeadJobs(sql: Sql, o: { queue?: string; limit: number }): Promise<DeadJob[]> {
  return sql<DeadJob[]>`
    select id, queue, attempts, last_error, created_at, run_at as died_at, payload
    from jobs where dead ${o.queue === undefined ? sql`` : sql`and queue = ${o.queue}`}
    order by id limit ${o.limit}`;
}

const selected = (sql: Sql, s: DeadJobSelection) => ("ids" in s ? sql`and id = any(${s.ids}::bigint[])` : "queue" in s ? sql`and queue = ${s.queue}` : sql``);

/**
 * Makes dead jobs due again now with their attempts from zero (their last error kept until the
 * next attempt writes its own); the running servers claim them at their next poll. The ids retried.
 */
export async function retryDeadJobs(sql: Sql, s: DeadJobSelection): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    update jobs set dead = false, attempts = 0, run_at = now(), locked_by = null, locked_until = null
    where dead ${selected(sql, s)} returning id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/** Removes dead jobs for good. The ids removed. */
export async function discardDeadJobs(sql: Sql, s: DeadJobSelection): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`delete from jobs where dead ${selected(sql, s)} returning id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/**
 * Dead jobs that died before `cutoff` go for good (the hourly clean-up, server/maintenance/
 * retention.ts, after WEBHOOK_LOG_RETENTION_DAYS as the delivery log): kept for an operator to look at,
 * not forever. At most `limit` a call; the count removed.
 */
export async function removeDeadJobsBefore(sql: Sql, cutoff: Date, limit: number): Promise<number> {
  const rows = await sql`delete from jobs where id in (select id from jobs where dead and run_at < ${cutoff} order by id limit ${limit})`;
  return rows.count;
}
