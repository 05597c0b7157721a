import type { Sql } from "../db/client";
import { type Message, messageColumns } from "./store";

export type HistoryFilter = { direction?: "inbound" | "outbound"; from?: string; since?: Date; until?: Date; q?: string; hasCode?: boolean };

type Row = Message & { viewer_team_id: number | null };

/** The team a message is shown with is the viewer's own team at arrival, never another organization's. */
const asMessage = ({ viewer_team_id, ...m }: Row): Message => ({ ...m, team_id: viewer_team_id });

const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

function hasMessageFilters(f: HistoryFilter) {
  return f.from !== undefined || f.since !== undefined || f.until !== undefined || f.q !== undefined;
}

/**
 * Conditions on the joined `messages m`; the message's time is when it was received, else when it
 * was created. The sender compares without letter case, as a lock's sender does (an alphanumeric
 * sender arrives as GOOGLE one day and Google the next).
 */
function messageConditions(sql: Sql, f: HistoryFilter) {
  return sql`
    ${f.from !== undefined ? sql`and lower(m.from_number) = lower(${f.from})` : sql``}
    ${f.since !== undefined ? sql`and coalesce(m.received_at, m.created_at) >= ${f.since}` : sql``}
    ${f.until !== undefined ? sql`and coalesce(m.received_at, m.created_at) < ${f.until}` : sql``}
    ${f.q !== undefined ? sql`and m.text ilike ${likePattern(f.q)}` : sql``}`;
}

/**
 * Conditions on `message_visibility v` alone: the direction and the code flag live on the view's
 * rows (has_code has a partial index in seq order, migration 0080), so they need no join. The
 * code flag is written as SQL, not as a parameter, so that a prepared plan still matches that
 * index's predicate.
 */
function viewConditions(sql: Sql, f: HistoryFilter) {
  return sql`
    ${f.direction !== undefined ? sql`and v.outbound = ${f.direction === "outbound"}` : sql``}
    ${f.hasCode === true ? sql`and v.has_code` : f.hasCode === false ? sql`and not v.has_code` : sql``}`;
}

const hasViewFilters = (f: HistoryFilter) => f.direction !== undefined || f.hasCode !== undefined;

type Counts = { total: number; inbound: number; last_seq: number };

/** The organization's counts on the number, and whether it is attached to it, in one round trip. */
async function countsOf(sql: Sql, org: number, sim: number): Promise<Counts & { attached: boolean }> {
  const [row] = await sql<(Counts & { attached: boolean })[]>`
    select exists (select 1 from hosted_sim_organizations a where a.hosted_sim_id = ${sim} and a.organization_id = ${org}) as attached,
           coalesce(c.total, 0) as total, coalesce(c.inbound, 0) as inbound, coalesce(c.last_seq, 0) as last_seq
    from (select 1) one
    left join message_visibility_counts c on c.organization_id = ${org} and c.hosted_sim_id = ${sim}`;
  return row!;
}

type PageQuery = { organizationId: number; hostedSimId: number; filter: HistoryFilter; page: number; perPage: number };

/**
 * The seq values of one page, newest first. Unfiltered, with no visibility row ever removed
 * (last_seq = total), page p is the seq range (total - p*n, total - (p-1)*n]: a range of n
 * index entries whatever the page (keyset under the page interface, see migration 0021).
 * Otherwise an offset over the (organization, number, seq) index, joined to messages when the
 * filters need their columns.
 */
function pageIds(sql: Sql, q: PageQuery, counts: Counts) {
  const { organizationId: org, hostedSimId: sim, filter: f } = q;
  const offset = (q.page - 1) * q.perPage;
  if (!hasMessageFilters(f) && !hasViewFilters(f) && counts.last_seq === counts.total) {
    const high = counts.total - offset;
    return sql`
      select v.message_id, v.seq from message_visibility v
      where v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.seq between ${Math.max(1, high - q.perPage + 1)} and ${high}`;
  }
  const join = hasMessageFilters(f) ? sql`join messages m on m.id = v.message_id` : sql``;
  return sql`
    select v.message_id, v.seq from message_visibility v ${join}
    where v.organization_id = ${org} and v.hosted_sim_id = ${sim} ${viewConditions(sql, f)} ${hasMessageFilters(f) ? messageConditions(sql, f) : sql``}
    order by v.seq desc limit ${q.perPage} offset ${offset}`;
}

/**
 * One page of what an organization may see on a number, newest first (the order messages
 * became visible to it); null when the organization is not attached to the number. Only the page's messages are read; the unfiltered total comes from
 * message_visibility_counts, so a page costs the same on a number with a million messages.
 */
export async function messageHistory(sql: Sql, q: PageQuery): Promise<{ rows: Message[]; total: number } | null> {
  const { organizationId: org, hostedSimId: sim } = q;
  const counts = await countsOf(sql, org, sim);
  if (!counts.attached) return null;
  const rows = await sql<Row[]>`
    select ${messageColumns(sql)}, v.team_id as viewer_team_id
    from (${pageIds(sql, q, counts)}) p
    join message_visibility v on v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.seq = p.seq
    join messages m on m.id = p.message_id
    order by p.seq desc`;
  return { rows: rows.map(asMessage), total: await historyTotal(sql, q, counts) };
}

async function historyTotal(sql: Sql, q: PageQuery, counts: Counts): Promise<number> {
  const { organizationId: org, hostedSimId: sim, filter: f } = q;
  if (!hasMessageFilters(f) && f.hasCode === undefined) {
    if (f.direction === "inbound") return counts.inbound;
    if (f.direction === "outbound") return counts.total - counts.inbound;
    return counts.total;
  }
  const join = hasMessageFilters(f) ? sql`join messages m on m.id = v.message_id` : sql``;
  const [row] = await sql<{ total: number }[]>`
    select count(*) as total from message_visibility v ${join}
    where v.organization_id = ${org} and v.hosted_sim_id = ${sim} ${viewConditions(sql, f)} ${hasMessageFilters(f) ? messageConditions(sql, f) : sql``}`;
  return row?.total ?? 0;
}

/**
 * One message, if the organization (or one of the organizations, a read's scope) may see it
 * (message_visibility); null otherwise. Seen by several, it is shown as the first of them sees it.
 */
export async function findVisibleMessage(sql: Sql, organizationId: number | number[], messageId: number): Promise<Message | null> {
  const viewers = Array.isArray(organizationId) ? organizationId : [organizationId];
  const [row] = await sql<Row[]>`
    select ${messageColumns(sql)}, v.team_id as viewer_team_id
    from message_visibility v join messages m on m.id = v.message_id
    where v.organization_id = any(${viewers}::bigint[]) and v.message_id = ${messageId}
    order by array_position(${viewers}::bigint[], v.organization_id) limit 1`;
  return row ? asMessage(row) : null;
}

/**
 * Whose history of a number a read shows: the first of the organizations attached to it (a
 * caller's read scope starts with the organization it acts in); null when none is.
 */
export async function historyViewer(sql: Sql, organizationIds: number[], hostedSimId: number): Promise<number | null> {
  if (organizationIds.length === 1) return organizationIds[0]!;
  const [row] = await sql<{ organization_id: number }[]>`
    select organization_id from hosted_sim_organizations
    where hosted_sim_id = ${hostedSimId} and organization_id = any(${organizationIds}::bigint[])
    order by array_position(${organizationIds}::bigint[], organization_id) limit 1`;
  return row?.organization_id ?? null;
}

/** Where a wait starts: after a message id (the default, `lastMessageId` at the call's start), or after a time of reception. */
export type WaitStart = { afterId: number } | { afterTime: Date };

export type NextQuery = {
  /** The organizations whose view counts, in the order a message seen by several is shown (the first). */
  viewers: number[];
  hostedSimId: number;
  start: WaitStart;
  filter: Pick<HistoryFilter, "from" | "q" | "hasCode">;
  /** Only these message ids (those the bus announced), or every message after `start`. */
  among?: number[];
};

/**
 * The first inbound message after `start` that one of `viewers` may see on the number and that
 * matches the filter, in storage (id) order, shown as the first viewer that sees it sees it; null
 * when none. The same visibility rows and filters as the history, over the visibility primary key
 * (organization, number, message id).
 */
export async function findNextMessage(sql: Sql, q: NextQuery): Promise<Message | null> {
  const f: HistoryFilter = { ...q.filter, direction: "inbound" };
  const start = "afterId" in q.start ? sql`and v.message_id > ${q.start.afterId}` : sql`and coalesce(m.received_at, m.created_at) > ${q.start.afterTime}`;
  const [row] = await sql<Row[]>`
    select ${messageColumns(sql)}, v.team_id as viewer_team_id
    from message_visibility v join messages m on m.id = v.message_id
    where v.organization_id = any(${q.viewers}::bigint[]) and v.hosted_sim_id = ${q.hostedSimId}
      ${q.among ? sql`and v.message_id = any(${q.among}::bigint[])` : sql``}
      ${start} ${viewConditions(sql, f)} ${messageConditions(sql, f)}
    order by v.message_id, array_position(${q.viewers}::bigint[], v.organization_id) limit 1`;
  return row ? asMessage(row) : null;
}

type InboxQuery = { organizationId: number; filter: Omit<HistoryFilter, "direction" | "since" | "until">; before?: number; limit: number };

/**
 * Inbound messages of every number the organization is attached to now, newest (highest id)
 * first, `limit` of them with ids below `before`: a keyset page, so messages arriving while a
 * client scrolls never shift the pages it has not read yet.
 */
export async function inboxPage(sql: Sql, q: InboxQuery): Promise<Message[]> {
  const f = q.filter;
  const rows = await sql<Row[]>`
    select ${messageColumns(sql)}, v.team_id as viewer_team_id
    from message_visibility v
    join hosted_sim_organizations a on a.hosted_sim_id = v.hosted_sim_id and a.organization_id = v.organization_id
    join messages m on m.id = v.message_id
    where v.organization_id = ${q.organizationId} and not v.outbound
      ${q.before !== undefined ? sql`and v.message_id < ${q.before}` : sql``}
      ${viewConditions(sql, f)} ${messageConditions(sql, f)}
    order by v.message_id desc limit ${q.limit}`;
  return rows.map(asMessage);
}
