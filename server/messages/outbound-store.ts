import type postgres from "postgres";
import type { Sql } from "../db/client";
import type { DeviceStatus } from "../devices/transitions";
import { type Message, messageColumns } from "./store";

export type OutboundInsert = {
  hostedSimId: number;
  number: string;
  organizationId: number;
  teamId: number | null;
  locked: boolean;
  deviceId: number | null;
  simSlot: number | null;
  /** `scheduled` when send_at is ahead, else `queued`. */
  status: "scheduled" | "queued";
  sendAt: Date | null;
  expiresAt: Date | null;
  batchId: string | null;
  /** The sender pool (`hosted_sims`) the send was accepted through; null for one `hosted_sim`. */
  senderPool: number[] | null;
};

/**
 * Stores outbound messages (one per recipient, in the order given, ids ascending) in ONE
 * statement: the messages, their visibility rows (visible to the sending organization alone;
 * their history seqs handed out as one range, as inbound.ts does, instead of one counts upsert
 * per row) and the jobs `jobs` builds from the new ids (a query of one `id` column). The quota is
 * taken after, by takeQuota, in the same transaction.
 */
export async function insertOutbound(
  tx: Sql,
  o: OutboundInsert,
  recipients: { to: string; text: string }[],
  jobs: (ids: postgres.Fragment) => postgres.Fragment[],
): Promise<number[]> {
  const n = recipients.length;
  const ids = tx`select id from input`;
  // Each job insert a CTE of its own (job0, job1, ...), so they run in the same statement.
  const jobInserts = jobs(ids).reduce((all, insert, i) => tx`${all}, ${tx(`job${i}`)} as (${insert})`, tx``);
  const [row] = await tx<{ ids: number[] }[]>`
    with input as (
      select r.to_number, r.text, r.k, nextval(pg_get_serial_sequence('messages', 'id')) as id
      from unnest(${recipients.map((r) => r.to)}::text[], ${recipients.map((r) => r.text)}::text[]) with ordinality as r(to_number, text, k)
      order by r.k),
    msgs as (
      insert into messages (id, hosted_sim_id, number, direction, from_number, to_number, text, status, source,
                            device_id, sim_slot, team_id, locked, organization_id, send_at, expires_at, batch_id, status_updated_at, sender_pool)
      overriding system value
      select i.id, ${o.hostedSimId}, ${o.number}, 'outbound', ${o.number}, i.to_number, i.text, ${o.status}, 'api',
             ${o.deviceId}, ${o.simSlot}, ${o.teamId}, ${o.locked}, ${o.organizationId}, ${o.sendAt}, ${o.expiresAt}, ${o.batchId}::uuid, now(),
             ${o.senderPool}::bigint[]
      from input i order by i.k
      returning id),
    counted as (
      insert into message_visibility_counts as c (organization_id, hosted_sim_id, last_seq, total, inbound)
      select ${o.organizationId}, ${o.hostedSimId}, count(*), count(*), 0 from input having count(*) > 0
      on conflict (organization_id, hosted_sim_id) do update set last_seq = c.last_seq + excluded.last_seq, total = c.total + excluded.total
      returning last_seq),
    vis as (
      insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id, outbound, seq)
      select ${o.organizationId}, ${o.hostedSimId}, i.id, ${o.teamId}, true, c.last_seq - ${n} + i.k
      from input i, counted c order by i.k)
    ${jobInserts}
    select coalesce((select array_agg(id order by id) from msgs), '{}') as ids`;
  return row!.ids.map(Number);
}

/**
 * Takes `n` units of the organization's monthly quota for messages stored in this transaction,
 * if they fit under `limit` (all or none): one conditional upsert of the month's count. Run it
 * last before the commit: its row lock serializes the organization's sends only from there to
 * the commit, and the check and the count are one step, so concurrent sends at the last unit of
 * the month never pass the limit together. False when they do not fit (roll the sends back).
 */
export async function takeQuota(tx: Sql, organizationId: number, n: number, limit: number): Promise<boolean> {
  const rows = await tx`
    insert into outbound_usage as u (organization_id, month, used)
    select ${organizationId}, date_trunc('month', now() at time zone 'UTC')::date, ${n}::int where ${n}::int <= ${limit}::int
    on conflict (organization_id, month) do update set used = u.used + excluded.used where u.used + excluded.used <= ${limit}::int
    returning used`;
  return rows.length > 0;
}

/**
 * What a send from a number needs to know before it stores anything, in one round trip: the
 * organization's monthly limit, and the number's current lock holder (null when free or run out).
 */
export async function sendContext(sql: Sql, organizationId: number, hostedSimId: number) {
  const [row] = await sql<{ monthly_limit: number | null; holder: number | null; locked_until: string | null }[]>`
    select (select p.monthly_messages from organizations o join plans p on p.name = o.plan where o.id = ${organizationId}) as monthly_limit,
      h.lock_organization_id as holder,
      to_char(h.locked_until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as locked_until
    from (select 1) one
    left join hosted_sims h on h.id = ${hostedSimId} and h.lock_organization_id is not null and h.locked_until > now()`;
  const holder = row?.holder == null ? null : { organization_id: row.holder, locked_until: row.locked_until! };
  return { limit: row?.monthly_limit ?? 0, holder };
}

/**
 * Whether a number may send for an organization now: its status, and another organization's
 * live lock (with its end). Checked at acceptance (sendContext) and again when a pool-number
 * send is due (outbound-jobs.ts): a send accepted or scheduled before the lock must not go out
 * under it.
 */
export async function senderState(sql: Sql, organizationId: number, hostedSimId: number | null) {
  // A message whose number row is gone (deleted by hand) has nothing to send from.
  if (hostedSimId === null) return { active: false, lockedUntil: null };
  const [row] = await sql<{ active: boolean; locked_until: Date | null }[]>`
    select status = 'active' as active,
      case when lock_organization_id is not null and lock_organization_id <> ${organizationId} and locked_until > now() then locked_until end as locked_until
    from hosted_sims where id = ${hostedSimId}`;
  return { active: row?.active ?? false, lockedUntil: row?.locked_until ?? null };
}

/** `dispatched`: a device send the pacer has handed to its phone (message.send). */
/** `provider_may_have`: a provider call of it may have reached the provider (migration 0320). */
export type OutboundRow = Message & { organization_id: number; dispatched: boolean; provider_may_have: boolean };

export async function findOutbound(sql: Sql, id: number): Promise<OutboundRow | null> {
  const [row] = await sql<OutboundRow[]>`
    select ${messageColumns(sql)}, m.organization_id, m.dispatched_at is not null as dispatched, m.provider_may_have
    from messages m where m.id = ${id} and m.direction = 'outbound'`;
  return row ?? null;
}

/** What decides whether a device send's time is up, for many messages at once (the device-timeout batch). */
export async function deviceSendDeadlines(sql: Sql, ids: number[]) {
  return sql<{ id: number; status: string; expires_at: Date | null; dispatched: boolean }[]>`
    select id, status, expires_at, dispatched_at is not null as dispatched from messages
    where id = any(${ids}::bigint[]) and direction = 'outbound'`;
}

/** The outbound message a device may report on: sent through that device by the caller's organization, with the device's status (a revoked device reports nothing). */
export async function findDeviceOutbound(
  sql: Sql,
  q: { messageId: number; deviceId: number; organizationId: number },
): Promise<(OutboundRow & { device_status: DeviceStatus }) | null> {
  const [row] = await sql<(OutboundRow & { device_status: DeviceStatus })[]>`
    select ${messageColumns(sql)}, m.organization_id, m.dispatched_at is not null as dispatched, d.status as device_status
    from messages m join devices d on d.id = m.device_id
    where m.id = ${q.messageId} and m.device_id = ${q.deviceId} and m.organization_id = ${q.organizationId} and m.direction = 'outbound'`;
  return row ?? null;
}

/**
 * What a status move also records: the failure reason (failed, expired), the provider's id of
 * the message, and `attempt`: the move is the message being handed over (a provider call, a
 * device taking it), counted once when it leaves scheduled or queued. `neverWentOut`: a move to
 * `failed` of a send nothing was handed (its quota unit is given back, as for `cancelled` and
 * `expired`). `providerCall`: the move starts a provider call (`provider_may_have` set).
 */
export type StatusExtra = { error?: string | null; externalId?: string | null; attempt?: boolean; neverWentOut?: boolean; providerCall?: boolean };

/**
 * Moves an outbound message to `to` only from one of `from` (a conditional UPDATE: concurrent
 * reports cannot both win a transition). Returns false when the message was not in such a state.
 */
export async function moveStatus(sql: Sql, id: number, to: string, from: string[], extra: StatusExtra = {}) {
  return (await moveStatuses(sql, [id], to, from, extra)).length > 0;
}

/** moveStatus for many messages in one statement (a dispatch batch); returns the ids that moved. */
export async function moveStatuses(sql: Sql, ids: number[], to: string, from: string[], extra: StatusExtra = {}): Promise<number[]> {
  if (ids.length === 0) return [];
  // A message that ends cancelled or expired, or failed before it was handed over, never went out:
  // its quota unit is given back (each of those states is final, so a message gives it back once).
  const givesBack = to === "cancelled" || to === "expired" || (to === "failed" && extra.neverWentOut === true);
  const rows = await sql<{ id: number }[]>`
    with moved as (
      update messages set status = ${to}, status_updated_at = now(),
        attempts = attempts + case when ${extra.attempt ?? false}::boolean and status in ('scheduled', 'queued') then 1 else 0 end,
        error = case when ${to} in ('failed', 'expired') then ${extra.error ?? null} else error end,
        external_id = coalesce(${extra.externalId ?? null}, external_id),
        sent_at = case when ${to} in ('sent', 'delivered') then coalesce(sent_at, now()) else sent_at end,
        provider_may_have = provider_may_have or ${extra.providerCall ?? false}::boolean,
        updated_at = now()
      where id = any(${ids}::bigint[]) and direction = 'outbound' and status = any(${from})
      returning id, organization_id, created_at)
    ${
      givesBack
        ? sql`, given as (
      select organization_id, date_trunc('month', created_at at time zone 'UTC')::date as month, count(*)::int as n from moved group by 1, 2),
    -- The months' rows locked in key order before any is written, so two batches giving units
    -- back to the same organizations never wait for each other in a cycle (a deadlock).
    locked as (
      select u.organization_id, u.month, g.n from outbound_usage u join given g using (organization_id, month)
      order by u.organization_id, u.month for no key update of u),
    returned as (
      update outbound_usage u set used = u.used - l.n from locked l where u.organization_id = l.organization_id and u.month = l.month)`
        : sql``
    }
    select id from moved`;
  return rows.map((r) => r.id);
}

/**
 * One more provider call for a message already `sending` (a retry: its first call moved it
 * there); false when it is `sending` no more (a status callback moved it on since the job read it).
 */
export async function countAttempt(sql: Sql, id: number): Promise<boolean> {
  const rows =
    await sql`update messages set attempts = attempts + 1, provider_may_have = true, updated_at = now() where id = ${id} and status = 'sending' returning 1`;
  return rows.length > 0;
}

/** The provider answered that it did not take the message (a 429 or 5xx), and no earlier call went unanswered: no call of it is at the provider. */
export async function providerDeclined(sql: Sql, id: number) {
  await sql`update messages set provider_may_have = false, updated_at = now() where id = ${id} and status = 'sending'`;
}

/** The messages of a batch the organization sent, in recipient order; null when it has none (unknown or another's batch). */
export async function batchPage(sql: Sql, q: { organizationIds: number[]; batchId: string; page: number; perPage: number }) {
  const [count] = await sql<{ total: number }[]>`
    select count(*) as total from messages m where m.batch_id = ${q.batchId}::uuid and m.organization_id = any(${q.organizationIds}::bigint[])`;
  if (!count || count.total === 0) return null;
  const rows = await sql<Message[]>`
    select ${messageColumns(sql)} from messages m
    where m.batch_id = ${q.batchId}::uuid and m.organization_id = any(${q.organizationIds}::bigint[])
    order by m.id limit ${q.perPage} offset ${(q.page - 1) * q.perPage}`;
  return { rows, total: count.total };
}

/** Counts per status of a batch the organization sent; null when it has none. */
export async function batchSummary(sql: Sql, organizationIds: number[], batchId: string) {
  const rows = await sql<{ status: string; count: number; created_at: string }[]>`
    select m.status, count(*) as count, to_char(min(m.created_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at
    from messages m where m.batch_id = ${batchId}::uuid and m.organization_id = any(${organizationIds}::bigint[])
    group by m.status`;
  if (rows.length === 0) return null;
  return {
    batch_id: batchId,
    total: rows.reduce((n, r) => n + r.count, 0),
    counts: Object.fromEntries(rows.map((r) => [r.status, r.count])) as Record<string, number>,
    created_at: rows.map((r) => r.created_at).sort()[0]!,
  };
}
