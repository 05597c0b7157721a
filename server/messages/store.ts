import type { Sql } from "../db/client";

/** The message object of API.md §3 "Messages". */
export type Message = {
  id: number;
  hosted_sim_id: number | null;
  number: string;
  direction: "inbound" | "outbound";
  from: string;
  to: string;
  text: string;
  status: string;
  source: "provider" | "device" | "api";
  device_id: number | null;
  sim_slot: number | null;
  external_id: string | null;
  team_id: number | null;
  locked: boolean;
  error: string | null;
  /** Outbound: times handed to a phone or the provider (0 until then; inbound messages: 0). */
  attempts: number;
  /** The one-time code of an inbound message (code.ts), null when it carries none and for outbound messages. */
  code: string | null;
  received_at: string | null;
  sent_at: string | null;
  /** Outbound: when a scheduled send goes out (null: at once), and after when it may no longer go out (null: no expiry). */
  send_at: string | null;
  expires_at: string | null;
  /** Outbound: the bulk request the message came from (null for a single send). */
  batch_id: string | null;
  status_updated_at: string;
  created_at: string;
  updated_at: string;
};

/** Columns of `messages` (aliased `m`) as the API's message object. */
export const messageColumns = (sql: Sql) => sql`
  m.id, m.hosted_sim_id, m.number, m.direction, m.from_number as "from", m.to_number as "to", m.text, m.status, m.source,
  m.device_id, m.sim_slot, m.external_id, m.team_id, m.locked, m.error, m.attempts, m.code,
  to_char(m.received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as received_at,
  to_char(m.sent_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as sent_at,
  to_char(m.send_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as send_at,
  to_char(m.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as expires_at,
  m.batch_id::text as batch_id,
  to_char(coalesce(m.status_updated_at, m.updated_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as status_updated_at,
  to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
  to_char(m.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at`;

/** Messages to announce, each with the organizations (and their team at arrival) that may see it. */
export async function findMessagesForFanout(sql: Sql, ids: number[]) {
  const messages = await sql<Message[]>`select ${messageColumns(sql)} from messages m where m.id = any(${ids}::bigint[]) order by m.id`;
  // Each organization's view: its team of the message (a team deleted since has no name: null) and its alias of the number.
  const visibility = await sql<{ messageId: number; organizationId: number; teamId: number | null; teamName: string | null; alias: string | null }[]>`
    select v.message_id as "messageId", v.organization_id as "organizationId", v.team_id as "teamId", t.name as "teamName", a.alias
    from message_visibility v
    join messages m on m.id = v.message_id
    left join teams t on t.id = v.team_id
    left join hosted_sim_organizations a on a.hosted_sim_id = m.hosted_sim_id and a.organization_id = v.organization_id
    where v.message_id = any(${ids}::bigint[]) order by v.organization_id`;
  const byMessage = Map.groupBy(visibility, (v) => v.messageId);
  return messages.map((message) => ({ message, visibility: byMessage.get(message.id) ?? [] }));
}

/**
 * Outbound messages an organization created this calendar month (UTC): the plan quota's count.
 * Cancelled and expired messages never went out and are not counted (their unit is given back).
 * Kept in `outbound_usage` by outbound-store.ts (takeQuota, moveStatuses).
 */
export async function monthlyOutboundCount(sql: Sql, organizationId: number): Promise<number> {
  const [row] = await sql<{ used: number }[]>`
    select used from outbound_usage where organization_id = ${organizationId} and month = date_trunc('month', now() at time zone 'UTC')::date`;
  return row?.used ?? 0;
}

/**
 * The last message id handed out so far (0 before the first): every message stored later gets
 * a higher one. Read from the sequence, so a message still being stored counts as before.
 */
export async function lastMessageId(sql: Sql): Promise<number> {
  const [row] = await sql<{ id: number | null }[]>`select pg_sequence_last_value(pg_get_serial_sequence('messages', 'id')::regclass) as id`;
  return row?.id ?? 0;
}
