import type { Sql } from "../db/client";

export type Window = { key: string; windowMs: number; limit: number };

/**
 * Counts one attempt on each key in its fixed window and answers the counts, in the order of
 * `windows`. A key without a live window starts one; the attempt that first goes over its limit
 * restarts the window from now, so a key that used up its attempts is refused for a whole window.
 * One statement on the pool (not inside a caller's transaction), so every instance sees the
 * attempt at once; rows are taken in key order, so concurrent attempts count in the same order
 * on every key.
 */
export async function countAttempts(sql: Sql, windows: Window[], now: Date): Promise<number[]> {
  const rows = await sql<{ key: string; attempts: number }[]>`
    insert into verification_throttle as t (key, attempts, max_attempts, resets_at)
    select k, 1, m, ${now}::timestamptz + make_interval(secs => ms / 1000.0)
    from unnest(${windows.map((w) => w.key)}::text[], ${windows.map((w) => w.limit)}::int[], ${windows.map((w) => w.windowMs)}::bigint[]) as u(k, m, ms)
    order by k
    on conflict (key) do update set
      attempts = case when t.resets_at <= ${now} then 1 else t.attempts + 1 end,
      max_attempts = excluded.max_attempts,
      resets_at = case when t.resets_at <= ${now} or t.attempts = excluded.max_attempts then excluded.resets_at else t.resets_at end
    returning key, attempts`;
  const byKey = new Map(rows.map((r) => [r.key, r.attempts]));
  return windows.map((w) => byKey.get(w.key)!);
}

/** Takes back one attempt on each key, counted in advance, that turned out not to be a wrong code (rows locked in key order, as countAttempts does). */
export async function uncountAttempts(sql: Sql, keys: string[], now: Date) {
  await sql`
    with mine as (
      select key from verification_throttle where key = any(${keys}::text[]) and attempts > 0 and resets_at > ${now} order by key for update)
    update verification_throttle t set attempts = t.attempts - 1 from mine where t.key = mine.key`;
}

/** Drops a few windows that ended before `before`, never waiting for a row in use (rows are reused per key; this only bounds the table). */
export async function dropEndedWindows(sql: Sql, before: Date) {
  await sql`
    delete from verification_throttle
    where key in (select key from verification_throttle where resets_at < ${before} limit 100 for update skip locked)`;
}
