import type { Sql } from "../db/client";
import { event, messageStatusEvent } from "../events/catalog";
import type { NewEvent } from "../events/log";
import type { MessageEvent } from "../events/payloads";
import { type Message, messageColumns } from "./store";

/** An outbound message as its sending organization sees it in events: its team there, its alias of the number. */
export type OutboundView = { message: Message; organizationId: number; alias: string | null; teamName: string | null };

/**
 * Outbound messages with their sender's view, in id order, in one query whatever their number (a
 * bulk send, a dispatch batch): outbound messages are visible to the organization that sent them
 * alone, so its visibility row is the one whose organization is the message's.
 */
export async function outboundViews(sql: Sql, ids: number[]): Promise<OutboundView[]> {
  if (ids.length === 0) return [];
  type Row = Message & { sender: number; viewer_team_id: number | null; alias: string | null; team_name: string | null };
  const rows = await sql<Row[]>`
    select ${messageColumns(sql)}, m.organization_id as sender, v.team_id as viewer_team_id, a.alias, t.name as team_name
    from messages m
    join message_visibility v on v.message_id = m.id and v.organization_id = m.organization_id
    left join hosted_sim_organizations a on a.hosted_sim_id = m.hosted_sim_id and a.organization_id = m.organization_id
    left join teams t on t.id = v.team_id
    where m.id = any(${ids}::bigint[]) and m.direction = 'outbound'
    order by m.id`;
  return rows.map(({ sender, viewer_team_id, alias, team_name, ...m }) => ({
    message: { ...m, team_id: viewer_team_id },
    organizationId: sender,
    alias,
    teamName: team_name,
  }));
}

/** The event payload of a message in its sender's view. */
export function messageEventPayload(v: OutboundView): MessageEvent {
  const { message } = v;
  return {
    message: message as unknown as MessageEvent["message"],
    hosted_sim: { id: message.hosted_sim_id ?? 0, number: message.number, alias: v.alias },
    team: message.team_id === null || v.teamName === null ? null : { id: message.team_id, name: v.teamName },
  };
}

/** The events of the current status of outbound messages, to their sending organization only. */
export function statusEventsOfViews(views: OutboundView[]): NewEvent[] {
  const events: NewEvent[] = [];
  for (const v of views) {
    const build = messageStatusEvent(v.message.status);
    const m = v.message;
    if (build) events.push(build({ organizationId: v.organizationId, hostedSimId: m.hosted_sim_id, teamId: m.team_id }, messageEventPayload(v)));
  }
  return events;
}

/** The status events of outbound messages by id (one query for all), each to the organization that sent it. */
export async function statusEventsOf(sql: Sql, ids: number[]): Promise<NewEvent[]> {
  return statusEventsOfViews(await outboundViews(sql, ids));
}

/** `message.send` to the device that holds the number: the command the pacer appends when it hands a send over. */
export function deviceCommand(
  organizationId: number,
  deviceId: number,
  m: Pick<Message, "id" | "hosted_sim_id" | "number" | "to" | "text" | "sim_slot">,
): NewEvent {
  const { id, hosted_sim_id, number, to, text, sim_slot } = m;
  return event.messageSend({ organizationId, hostedSimId: hosted_sim_id, deviceId }, { message: { id, hosted_sim_id, number, to, text, sim_slot } });
}

/** message.send_cancelled for those of `ids` that were handed to a phone: it is told not to send them. */
export async function callOffEvents(tx: Sql, ids: number[]): Promise<NewEvent[]> {
  if (ids.length === 0) return [];
  const handed = await tx<{ id: number; organization_id: number; hosted_sim_id: number | null; device_id: number }[]>`
    select id, organization_id, hosted_sim_id, device_id from messages where id = any(${ids}::bigint[]) and dispatched_at is not null and device_id is not null`;
  return handed.map((m) =>
    event.messageSendCancelled({ organizationId: m.organization_id, hostedSimId: m.hosted_sim_id, deviceId: m.device_id }, { message: { id: m.id } }),
  );
}
