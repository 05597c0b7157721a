import { isForeignKeyViolation, type Sql } from "../db/client";
import { isoColumn, notATeam } from "./store";

export type LockRequest = {
  hostedSimId: number;
  organizationId: number;
  teamId: number | null;
  userId: number | null;
  apiKeyId: number | null;
  durationSeconds: number;
  /** Undefined: a new lock does not release on a message, an extension keeps the lock's options (with its sender). */
  releaseOnMessage: boolean | undefined;
  /** Only with releaseOnMessage true: the one sender whose message releases the lock. */
  sender: string | null;
  /** Now, by the server clock (ms epoch). */
  at: number;
};

export type TakenLock = {
  locked_until: string;
  team_id: number | null;
  user_id: number | null;
  release_on_message: boolean;
  sender: string | null;
  extended: boolean;
  /** The lock replaced had run out without its expiry job having ended it yet (that job will find it gone). */
  ran_out: boolean;
};

/**
 * Lock times are the server clock's (`at`, ms epoch, passed in by numbers/locks.ts), like the
 * delay of the expiry job that ends a lock, so one fake clock drives both in tests.
 */
const clockTime = (sql: Sql, at: number) => sql`${new Date(at)}::timestamptz`;

/** Ends the current lock in an UPDATE of hosted_sims: every lock column back to "no lock". */
export const clearLockColumns = (sql: Sql) => sql`
  lock_organization_id = null, lock_team_id = null, lock_user_id = null, lock_api_key_id = null, locked_until = null,
  lock_release_on_message = false, lock_sender = null`;

/**
 * Takes the lock, or extends it for the organization already holding it, in one conditional
 * UPDATE: the row is locked first (the FOR UPDATE sub-select), so two concurrent requests are
 * decided one after the other and exactly one organization ends up holding it. Returns null when
 * another organization holds a live lock or the caller's organization is not attached.
 * `locked_until` is kept to the millisecond so its ISO form identifies the lock exactly.
 * Call it in a transaction: the row is locked by a statement of its own before the UPDATE, whose
 * snapshot then sees the attachments as whoever held the row left them (a proof that just took
 * the number from the caller's organization, byos-store.ts attachAlone); waiting inside the
 * UPDATE, its attachment check would read the snapshot from before the wait.
 */
export async function takeLock(sql: Sql, r: LockRequest): Promise<TakenLock | null> {
  const keep = r.releaseOnMessage === undefined;
  const now = clockTime(sql, r.at);
  await sql`select 1 from hosted_sims where id = ${r.hostedSimId} for update`;
  const [row] = await sql<TakenLock[]>`
    update hosted_sims h set
      lock_organization_id = ${r.organizationId},
      lock_team_id = case when old.own and ${r.teamId}::bigint is null then old.lock_team_id else ${r.teamId}::bigint end,
      lock_user_id = case when old.own then old.lock_user_id else ${r.userId}::bigint end,
      lock_api_key_id = case when old.own then old.lock_api_key_id else ${r.apiKeyId}::bigint end,
      locked_until = case when old.own then greatest(old.locked_until, date_trunc('milliseconds', ${now} + make_interval(secs => ${r.durationSeconds})))
                          else date_trunc('milliseconds', ${now} + make_interval(secs => ${r.durationSeconds})) end,
      lock_release_on_message = case when old.own and ${keep}::boolean then old.lock_release_on_message else ${r.releaseOnMessage === true}::boolean end,
      lock_sender = case when old.own and ${keep}::boolean then old.lock_sender else ${r.sender}::text end,
      updated_at = now()
    from (
      select id, lock_team_id, lock_user_id, lock_api_key_id, locked_until, lock_release_on_message, lock_sender,
             (lock_organization_id = ${r.organizationId} and locked_until > ${now}) is true as own,
             (lock_organization_id is not null and locked_until > ${now}) is true as live,
             lock_organization_id is not null and not (locked_until > ${now}) is true as ran_out
      from hosted_sims where id = ${r.hostedSimId} for update
    ) old
    where h.id = old.id and (old.own or not old.live)
      and exists (select 1 from hosted_sim_organizations a where a.hosted_sim_id = h.id and a.organization_id = ${r.organizationId})
    returning ${isoColumn(sql, "h.locked_until")} as locked_until, h.lock_team_id as team_id, h.lock_user_id as user_id,
      h.lock_release_on_message as release_on_message, h.lock_sender as sender, old.own as extended, old.ran_out`.catch((e) =>
    // A team deleted since the route checked it (the foreign key of migration 0300): the same 422 as a team never there.
    Promise.reject(isForeignKeyViolation(e, "hosted_sims_lock_team_id_fkey") ? notATeam() : e),
  );
  if (!row) return null;
  await recordLock(sql, r, row);
  return row;
}

/** Lock history: an extension moves the open row's end; anything else closes what was open and opens a new row. */
async function recordLock(sql: Sql, r: LockRequest, lock: TakenLock) {
  if (lock.extended) {
    const moved = await sql`
      update number_locks set locked_until = ${lock.locked_until}, team_id = ${lock.team_id},
        release_on_message = ${lock.release_on_message}, sender = ${lock.sender}
      where hosted_sim_id = ${r.hostedSimId} and organization_id = ${r.organizationId} and released_at is null returning 1`;
    if (moved.length > 0) return;
  }
  await sql`
    update number_locks set released_at = least(locked_until, ${clockTime(sql, r.at)}),
      release_reason = case when locked_until <= ${clockTime(sql, r.at)} then 'expired' else 'replaced' end
    where hosted_sim_id = ${r.hostedSimId} and released_at is null`;
  await sql`
    insert into number_locks (hosted_sim_id, organization_id, team_id, user_id, api_key_id, locked_until, release_on_message, sender)
    values (${r.hostedSimId}, ${r.organizationId}, ${lock.team_id}, ${lock.user_id}, ${r.apiKeyId}, ${lock.locked_until},
            ${lock.release_on_message}, ${lock.sender})`;
}

/** Releases a live lock held by the organization; false when it holds none. */
export async function releaseLock(sql: Sql, hostedSimId: number, organizationId: number, at: number): Promise<boolean> {
  const rows = await sql`
    update hosted_sims set ${clearLockColumns(sql)}, updated_at = now()
    where id = ${hostedSimId} and lock_organization_id = ${organizationId} and locked_until > ${clockTime(sql, at)}
    returning 1`;
  if (rows.length === 0) return false;
  await sql`
    update number_locks set released_at = ${clockTime(sql, at)}, release_reason = 'unlock'
    where hosted_sim_id = ${hostedSimId} and organization_id = ${organizationId} and released_at is null`;
  return true;
}

/**
 * Clears a lock that has run out, if it is still the very lock named (organization and end):
 * an extension or a new lock since then leaves it alone. Returns whether it cleared it, or the
 * milliseconds still to wait when the lock has not run out yet.
 */
export async function clearExpiredLock(
  sql: Sql,
  hostedSimId: number,
  organizationId: number,
  lockedUntil: string,
  at: number,
): Promise<"cleared" | "gone" | number> {
  const now = clockTime(sql, at);
  const [row] = await sql<{ remaining_ms: number; expired: boolean }[]>`
    select extract(epoch from locked_until - ${now})::float8 * 1000 as remaining_ms, locked_until <= ${now} as expired
    from hosted_sims where id = ${hostedSimId} and lock_organization_id = ${organizationId} and locked_until = ${lockedUntil}::timestamptz
    for update`;
  if (!row) return "gone";
  if (!row.expired) return Math.ceil(row.remaining_ms);
  await sql`
    update hosted_sims set ${clearLockColumns(sql)}, updated_at = now()
    where id = ${hostedSimId}`;
  await sql`
    update number_locks set released_at = locked_until, release_reason = 'expired'
    where hosted_sim_id = ${hostedSimId} and organization_id = ${organizationId} and released_at is null`;
  return "cleared";
}

export type LockHistoryRow = {
  organization_id: number;
  team_id: number | null;
  locked_until: string;
  released_at: string | null;
  release_reason: string | null;
  release_on_message: boolean;
  sender: string | null;
  released_by_message_id: number | null;
};

export async function lockHistory(sql: Sql, hostedSimId: number): Promise<LockHistoryRow[]> {
  return sql<LockHistoryRow[]>`
    select organization_id, team_id, ${isoColumn(sql, "locked_until")} as locked_until, ${isoColumn(sql, "released_at")} as released_at, release_reason,
      release_on_message, sender, released_by_message_id
    from number_locks where hosted_sim_id = ${hostedSimId} order by id`;
}
