import type { Sql } from "../db/client";
import { type Message, messageColumns } from "./store";

export type HistoryFilter = { direction?: "inbound" | "outbound"; from?: string; since?: Date; until?: Date; q?: string };

type Row = Message & { viewer_team_id: number | null };

/** The team a message is shown with is the viewer's own team at arrival, never another organization's. */
const asMessage = ({ viewer_team_id, ...m }: Row): Message => ({ ...m, team_id: viewer_team_id });

const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

function hasMessageFilters(f: HistoryFilter) {
  return f.from !== undefined || f.since !== undefined || f.until !== undefined || f.q !== undefined;
}

/** Conditions on the joined `messages m`; the message's time is when it was received, else when it was created. */
function messageConditions(sql: Sql, f: HistoryFilter) {
  return sql`
    ${f.from !== undefined ? sql`and m.from_number = ${f.from}` : sql``}
    ${f.since !== undefined ? sql`and coalesce(m.received_at, m.created_at) >= ${f.since}` : sql``}
    ${f.until !== undefined ? sql`and coalesce(m.received_at, m.created_at) < ${f.until}` : sql``}
    ${f.q !== undefined ? sql`and m.text ilike ${likePattern(f.q)}` : sql``}`;
}

/**
 * One page of what an organization may see on a number, newest (highest id) first. Without
 * message filters the page's ids come from an index-only scan of message_visibility's primary
 * key (organization, number, message) and the total from message_visibility_counts, so a page
 * costs the same on a number with a million messages; only the page's 50 messages are read.
 */
export async function messageHistory(
  sql: Sql,
  q: { organizationId: number; hostedSimId: number; filter: HistoryFilter; page: number; perPage: number },
): Promise<{ rows: Message[]; total: number }> {
  const { organizationId: org, hostedSimId: sim, filter: f } = q;
  const offset = (q.page - 1) * q.perPage;
  const direction = f.direction === undefined ? sql`` : sql`and v.outbound = ${f.direction === "outbound"}`;
  const ids = hasMessageFilters(f)
    ? sql`
        select v.message_id from message_visibility v join messages m on m.id = v.message_id
        where v.organization_id = ${org} and v.hosted_sim_id = ${sim} ${direction} ${messageConditions(sql, f)}
        order by v.message_id desc limit ${q.perPage} offset ${offset}`
    : sql`
        select v.message_id from message_visibility v
        where v.organization_id = ${org} and v.hosted_sim_id = ${sim} ${direction}
        order by v.message_id desc limit ${q.perPage} offset ${offset}`;
  const rows = await sql<Row[]>`
    select ${messageColumns(sql)}, v.team_id as viewer_team_id
    from (${ids}) p
    join message_visibility v on v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.message_id = p.message_id
    join messages m on m.id = p.message_id
    order by m.id desc`;
  return { rows: rows.map(asMessage), total: await historyTotal(sql, org, sim, f) };
}

async function historyTotal(sql: Sql, org: number, sim: number, f: HistoryFilter): Promise<number> {
  if (!hasMessageFilters(f)) {
    const [c] = await sql<{ total: number; inbound: number }[]>`
      select total, inbound from message_visibility_counts where organization_id = ${org} and hosted_sim_id = ${sim}`;
    if (!c) return 0;
    if (f.direction === "inbound") return c.inbound;
    if (f.direction === "outbound") return c.total - c.inbound;
    return c.total;
  }
  const direction = f.direction === undefined ? sql`` : sql`and v.outbound = ${f.direction === "outbound"}`;
  const [row] = await sql<{ total: number }[]>`
    select count(*) as total from message_visibility v join messages m on m.id = v.message_id
    where v.organization_id = ${org} and v.hosted_sim_id = ${sim} ${direction} ${messageConditions(sql, f)}`;
  return row?.total ?? 0;
}

/** One message, if the organization may see it (message_visibility); null otherwise. */
export async function findVisibleMessage(sql: Sql, organizationId: number, messageId: number): Promise<Message | null> {
  const [row] = await sql<Row[]>`
    select ${messageColumns(sql)}, v.team_id as viewer_team_id
    from message_visibility v join messages m on m.id = v.message_id
    where v.organization_id = ${organizationId} and v.message_id = ${messageId}`;
  return row ? asMessage(row) : null;
}
