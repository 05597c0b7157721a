import type { Sql } from "../db/client";
import { clearLockColumns } from "./lock-store";

/*
 * The hosted SIMs of BYOS SIM cards (type virtual, provider byos). numbers/ is the only writer of
 * hosted_sims and hosted_sim_organizations; the devices feature calls these functions once a
 * verification SMS has proved a number (docs/api-notes.md "Numbers change only by proof"), and
 * when it revokes a device. Call them inside the transaction that changes the SIM card.
 */

/**
 * shared_max_orgs 1: the organization that proved it holds the SIM is the number's only one. A
 * lock of an organization it takes the number from ends with that organization's attachment
 * (history: `detached`): a lock belongs to an organization attached to the number, or a message
 * arriving under it would be given to one that no longer holds the number (API.md "Lock meaning").
 */
async function attachAlone(sql: Sql, hostedSimId: number, organizationId: number) {
  await sql`delete from hosted_sim_organizations where hosted_sim_id = ${hostedSimId} and organization_id <> ${organizationId}`;
  const ended = await sql`
    update hosted_sims set ${clearLockColumns(sql)}, updated_at = now()
    where id = ${hostedSimId} and lock_organization_id <> ${organizationId} returning 1`;
  if (ended.length > 0)
    await sql`
      update number_locks set released_at = least(locked_until, now()), release_reason = 'detached'
      where hosted_sim_id = ${hostedSimId} and released_at is null`;
  await sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${hostedSimId}, ${organizationId}) on conflict do nothing`;
}

/**
 * The hosted SIM of a proven number: created, or re-activated and re-linked when the number was
 * BYOS before (a revoked device's SIM, or a card that moved to another number). Null when the
 * pool holds the number under another type: a pool number is never taken by a device.
 */
export async function linkProvenNumber(sql: Sql, number: string, organizationId: number): Promise<number | null> {
  const [sim] = await sql<{ id: number }[]>`
    insert into hosted_sims (number, provider, status, type, shared_max_orgs) values (${number}, 'byos', 'active', 'virtual', 1)
    on conflict (number) do update set status = 'active', updated_at = now()
      where hosted_sims.type = 'virtual' and hosted_sims.provider = 'byos'
    returning id`;
  if (!sim) return null;
  await attachAlone(sql, sim.id, organizationId);
  return sim.id;
}

/**
 * A verified card proved a new number. Its hosted SIM takes the number in place (same id, history,
 * team, alias and lock) when no hosted SIM has that number yet; otherwise the card moves to the
 * number's BYOS hosted SIM (linkProvenNumber) and its old one goes inactive. Null as for
 * linkProvenNumber. A concurrent proof of the same number fails on the unique number (23505).
 */
export async function renumberProvenNumber(sql: Sql, hostedSimId: number | null, number: string, organizationId: number): Promise<number | null> {
  if (hostedSimId === null) return linkProvenNumber(sql, number, organizationId);
  const [taken] = await sql<{ id: number }[]>`select id from hosted_sims where number = ${number}`;
  if (!taken) {
    const [moved] = await sql<{ id: number }[]>`
      update hosted_sims set number = ${number}, status = 'active', updated_at = now()
      where id = ${hostedSimId} and type = 'virtual' and provider = 'byos' returning id`;
    if (moved) return moved.id;
  }
  const linked = await linkProvenNumber(sql, number, organizationId);
  if (linked !== null && linked !== hostedSimId) await deactivateHostedSims(sql, [hostedSimId]);
  return linked;
}

/** API.md revoke: the hosted SIMs of a revoked device's cards go inactive (they keep their number and history). */
export async function deactivateHostedSims(sql: Sql, ids: number[]) {
  if (ids.length === 0) return;
  await sql`
    update hosted_sims set status = 'inactive', updated_at = now()
    where id = any(${ids}::bigint[]) and type = 'virtual' and provider = 'byos'`;
}

/** A number the pool holds under another type than BYOS: no SIM card may claim or prove it. */
export async function isPoolNumber(sql: Sql, number: string): Promise<boolean> {
  const [row] = await sql`select 1 from hosted_sims where number = ${number} and not (type = 'virtual' and provider = 'byos')`;
  return row !== undefined;
}

/** The active hosted SIM of a number: where the provider delivers an SMS sent to it. */
export async function findActiveHostedSimByNumber(sql: Sql, number: string) {
  const [row] = await sql<{ id: number }[]>`select id from hosted_sims where number = ${number} and status = 'active'`;
  return row ?? null;
}

/** Locks the rows of the numbers a batch of inbound SMS arrives on (in id order, as countInboundOnNumbers does), for the rest of the transaction. */
export async function lockInboundNumbers(sql: Sql, hostedSimIds: number[]): Promise<void> {
  await sql`select 1 from hosted_sims where id = any(${hostedSimIds}::bigint[]) order by id for no key update`;
}

/**
 * The part of storeInboundMessages' one statement that belongs to the numbers: it locks the
 * batch's hosted SIMs in id order (batches sharing numbers queue up instead of deadlocking),
 * bumps each one's messages_received_count once for the batch, and ends the locks that release on
 * a message (docs/api-notes.md "Locks that release on a message"). Expects a CTE `input (ord,
 * hosted_sim_id, from_number, message_id)` before it, `ord` the batch order. Defines, for the CTEs
 * after it:
 * - `sims (id, number, lock_organization_id, lock_team_id, locked)`: the lock as it was when the
 *   batch arrived, `locked` saying whether it was live;
 * - `arrivals (ord, under_lock)`: whether each input row arrived under that lock. A batch is
 *   stored in order and a lock covers the messages up to and including the one that releases
 *   it, so the rows after it are no longer under it;
 * - `releases (hosted_sim_id, message_id)`: the locks this batch ended, with the message that
 *   ended each (the first of the batch from the lock's sender, or from anyone without one).
 */
export const countInboundOnNumbers = (sql: Sql) => sql`
    locked as (
      select id, lock_organization_id, lock_team_id, lock_release_on_message, lower(lock_sender) as sender,
             (lock_organization_id is not null and locked_until is not null and locked_until > now()) as live
      from hosted_sims where id in (select hosted_sim_id from input) order by id for no key update),
    releases as (
      select distinct on (i.hosted_sim_id) i.hosted_sim_id, i.ord, i.message_id
      from input i join locked l on l.id = i.hosted_sim_id
      where l.live and l.lock_release_on_message and (l.sender is null or lower(i.from_number) = l.sender)
      order by i.hosted_sim_id, i.ord),
    sims as (
      -- updated_at moves only when a lock ends (announced to every attached organization): every
      -- one of them reads it, and moving it for each SMS would tell them when one arrived under
      -- another organization's lock.
      update hosted_sims h set messages_received_count = h.messages_received_count + c.n,
        updated_at = case when r.ord is null then h.updated_at else now() end,
        lock_organization_id = case when r.ord is null then h.lock_organization_id end,
        lock_team_id = case when r.ord is null then h.lock_team_id end,
        lock_user_id = case when r.ord is null then h.lock_user_id end,
        lock_api_key_id = case when r.ord is null then h.lock_api_key_id end,
        locked_until = case when r.ord is null then h.locked_until end,
        lock_release_on_message = r.ord is null and h.lock_release_on_message,
        lock_sender = case when r.ord is null then h.lock_sender end
      from (select hosted_sim_id, count(*) as n from input group by hosted_sim_id) c
      join locked l on l.id = c.hosted_sim_id
      left join releases r on r.hosted_sim_id = c.hosted_sim_id
      where h.id = c.hosted_sim_id
      returning h.id, h.number, l.lock_organization_id, l.lock_team_id, l.live as locked, r.ord as release_ord),
    arrivals as (
      select i.ord, s.locked and (s.release_ord is null or i.ord <= s.release_ord) as under_lock
      from input i join sims s on s.id = i.hosted_sim_id),
    released_history as (
      update number_locks n set released_at = now(), release_reason = 'released_on_message', released_by_message_id = r.message_id
      from releases r where n.hosted_sim_id = r.hosted_sim_id and n.released_at is null
      returning n.id)`;
