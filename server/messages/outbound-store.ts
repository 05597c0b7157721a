import type { Sql } from "../db/client";
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
};

/**
 * Stores outbound messages (one per recipient, in the order given, ids ascending), visible to
 * the sending organization alone: one INSERT for the messages and one for their visibility
 * rows, whatever the count. Call inside the send transaction. Returns the ids in order.
 */
export async function insertOutbound(tx: Sql, o: OutboundInsert, recipients: { to: string; text: string }[]): Promise<number[]> {
  const rows = await tx<{ id: number }[]>`
    insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source,
                          device_id, sim_slot, team_id, locked, organization_id, send_at, expires_at, batch_id, status_updated_at)
    select ${o.hostedSimId}, ${o.number}, 'outbound', ${o.number}, r.to_number, r.text, ${o.status}, 'api',
           ${o.deviceId}, ${o.simSlot}, ${o.teamId}, ${o.locked}, ${o.organizationId}, ${o.sendAt}, ${o.expiresAt}, ${o.batchId}::uuid, now()
    from unnest(${recipients.map((r) => r.to)}::text[], ${recipients.map((r) => r.text)}::text[]) with ordinality as r(to_number, text, n)
    order by r.n
    returning id`;
  const ids = rows.map((r) => r.id).sort((a, b) => a - b);
  await tx`
    insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id, outbound)
    select ${o.organizationId}, ${o.hostedSimId}, id, ${o.teamId}, true from unnest(${ids}::bigint[]) with ordinality as t(id, n) order by n`;
  return ids;
}

/** Serializes an organization's sends for the rest of the transaction, so the quota is counted and used in one step. */
export async function lockOrganizationQuota(tx: Sql, organizationId: number) {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`simhost:outbound-quota:${organizationId}`}, 0))`;
}

export async function monthlyLimit(sql: Sql, organizationId: number): Promise<number> {
  const [row] = await sql<{ monthly_messages: number }[]>`
    select p.monthly_messages from organizations o join plans p on p.name = o.plan where o.id = ${organizationId}`;
  return row?.monthly_messages ?? 0;
}

/** The current lock holder of a number (null when free or run out), read inside the send transaction. */
export async function liveLockHolder(sql: Sql, hostedSimId: number): Promise<{ organization_id: number; locked_until: string } | null> {
  const [row] = await sql<{ organization_id: number; locked_until: string }[]>`
    select lock_organization_id as organization_id,
           to_char(locked_until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as locked_until
    from hosted_sims where id = ${hostedSimId} and lock_organization_id is not null and locked_until > now()`;
  return row ?? null;
}

/** `dispatched`: a device send the pacer has handed to its phone (message.send). */
export type OutboundRow = Message & { organization_id: number; dispatched: boolean };

export async function findOutbound(sql: Sql, id: number): Promise<OutboundRow | null> {
  const [row] = await sql<OutboundRow[]>`
    select ${messageColumns(sql)}, m.organization_id, m.dispatched_at is not null as dispatched from messages m where m.id = ${id} and m.direction = 'outbound'`;
  return row ?? null;
}

/** Outbound messages of an organization by id, in id order (the answer of a send). */
export async function findOutboundMessages(sql: Sql, organizationId: number, ids: number[]): Promise<Message[]> {
  return sql<Message[]>`
    select ${messageColumns(sql)} from messages m
    where m.id = any(${ids}::bigint[]) and m.organization_id = ${organizationId} and m.direction = 'outbound' order by m.id`;
}

/** The outbound message a device may report on: sent through that device by the caller's organization. */
export async function findDeviceOutbound(sql: Sql, q: { messageId: number; deviceId: number; organizationId: number }): Promise<OutboundRow | null> {
  const [row] = await sql<OutboundRow[]>`
    select ${messageColumns(sql)}, m.organization_id, m.dispatched_at is not null as dispatched from messages m
    where m.id = ${q.messageId} and m.device_id = ${q.deviceId} and m.organization_id = ${q.organizationId} and m.direction = 'outbound'`;
  return row ?? null;
}

/**
 * What a status move also records: the failure reason (failed, expired), the provider's id of
 * the message, and `attempt`: the move is the message being handed over (a provider call, a
 * device taking it), counted once when it leaves scheduled or queued.
 */
export type StatusExtra = { error?: string | null; externalId?: string | null; attempt?: boolean };

/**
 * Moves an outbound message to `to` only from one of `from` (a conditional UPDATE: concurrent
 * reports cannot both win a transition). Returns false when the message was not in such a state.
 */
export async function moveStatus(sql: Sql, id: number, to: string, from: string[], extra: StatusExtra = {}) {
  const rows = await sql`
    update messages set status = ${to}, status_updated_at = now(),
      attempts = attempts + case when ${extra.attempt ?? false}::boolean and status in ('scheduled', 'queued') then 1 else 0 end,
      error = case when ${to} in ('failed', 'expired') then ${extra.error ?? null} else error end,
      external_id = coalesce(${extra.externalId ?? null}, external_id),
      sent_at = case when ${to} in ('sent', 'delivered') then coalesce(sent_at, now()) else sent_at end,
      updated_at = now()
    where id = ${id} and direction = 'outbound' and status = any(${from})
    returning 1`;
  return rows.length > 0;
}

/** One more provider call for a message already `sending` (a retry: its first call moved it there). */
export async function countAttempt(sql: Sql, id: number) {
  await sql`update messages set attempts = attempts + 1, updated_at = now() where id = ${id} and status = 'sending'`;
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
