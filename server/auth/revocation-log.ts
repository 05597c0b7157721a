import type { Sql } from "../db/client";
import type { Invalidation } from "./caller-cache";

export type LoggedInvalidation = Invalidation & { id: number };

/** Held from the log insert to the commit, so ids become visible in id order (readers keep a watermark). */
const LOG_LOCK = 7_220_433;

/**
 * Appends invalidations inside the revoking transaction: they become visible exactly when the
 * revocation commits. The lock makes commit order equal id order, so a reader that has seen id
 * n has seen every id below n that will ever commit.
 */
export async function appendInvalidations(tx: Sql, list: Invalidation[]): Promise<number[]> {
  if (list.length === 0) return [];
  await tx`select pg_advisory_xact_lock(${LOG_LOCK})`;
  const ids: number[] = [];
  for (const i of list) {
    const [row] = await tx<{ id: number }[]>`insert into credential_revocations (payload) values (${tx.json(i as never)}) returning id`;
    ids.push(row!.id);
  }
  return ids;
}

export async function readInvalidationsAfter(sql: Sql, id: number, limit = 1000): Promise<LoggedInvalidation[]> {
  // As text, parsed here: the driver's jsonb handling differs between PostgreSQL and the embedded server.
  const rows = await sql<{ id: number; payload: string }[]>`
    select id, payload::text as payload from credential_revocations where id > ${id} order by id limit ${limit}`;
  return rows.map((r) => ({ id: r.id, ...(JSON.parse(r.payload) as Invalidation) }));
}

export async function latestInvalidationId(sql: Sql): Promise<number> {
  const [row] = await sql<{ id: number }[]>`select coalesce(max(id), 0)::int8 as id from credential_revocations`;
  return row!.id;
}

/** Rows older than `seconds` are gone; an instance whose reads failed that long treats everything as revoked. */
export async function pruneInvalidations(sql: Sql, seconds: number) {
  await sql`delete from credential_revocations where created_at < now() - make_interval(secs => ${seconds})`;
}
