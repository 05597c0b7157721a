import type { Sql } from "../db/client";
import { type Message, messageColumns } from "./store";

export type OutboundInsert = {
  hostedSimId: number;
  number: string;
  to: string;
  text: string;
  organizationId: number;
  teamId: number | null;
  locked: boolean;
  deviceId: number | null;
  simSlot: number | null;
};

/** Stores a queued outbound message, visible to the sending organization alone. Call inside the send transaction. */
export async function insertOutbound(tx: Sql, o: OutboundInsert): Promise<number> {
  const [row] = await tx<{ id: number }[]>`
    insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source,
                          device_id, sim_slot, team_id, locked, organization_id)
    values (${o.hostedSimId}, ${o.number}, 'outbound', ${o.number}, ${o.to}, ${o.text}, 'queued', 'api',
            ${o.deviceId}, ${o.simSlot}, ${o.teamId}, ${o.locked}, ${o.organizationId})
    returning id`;
  await tx`
    insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id, outbound)
    values (${o.organizationId}, ${o.hostedSimId}, ${row!.id}, ${o.teamId}, true)`;
  return row!.id;
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

export type OutboundRow = Message & { organization_id: number };

export async function findOutbound(sql: Sql, id: number): Promise<OutboundRow | null> {
  const [row] = await sql<OutboundRow[]>`
    select ${messageColumns(sql)}, m.organization_id from messages m where m.id = ${id} and m.direction = 'outbound'`;
  return row ?? null;
}

/** The outbound message a device may report on: sent through that device by the caller's organization. */
export async function findDeviceOutbound(sql: Sql, q: { messageId: number; deviceId: number; organizationId: number }): Promise<OutboundRow | null> {
  const [row] = await sql<OutboundRow[]>`
    select ${messageColumns(sql)}, m.organization_id from messages m
    where m.id = ${q.messageId} and m.device_id = ${q.deviceId} and m.organization_id = ${q.organizationId} and m.direction = 'outbound'`;
  return row ?? null;
}

/**
 * Moves an outbound message to `to` only from one of `from` (a conditional UPDATE: concurrent
 * reports cannot both win a transition). Returns false when the message was not in such a state.
 */
export async function moveStatus(sql: Sql, id: number, to: string, from: string[], extra: { error?: string | null; externalId?: string | null } = {}) {
  const rows = await sql`
    update messages set status = ${to},
      error = case when ${to} = 'failed' then ${extra.error ?? null} else error end,
      external_id = coalesce(${extra.externalId ?? null}, external_id),
      sent_at = case when ${to} in ('sent', 'delivered') then coalesce(sent_at, now()) else sent_at end,
      updated_at = now()
    where id = ${id} and direction = 'outbound' and status = any(${from})
    returning 1`;
  return rows.length > 0;
}
