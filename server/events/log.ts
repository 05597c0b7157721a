import type postgres from "postgres";
import type { Sql } from "../db/client";
import type { EventType } from "./catalog";
import { encodeCursor, type Position } from "./cursor";

/** One event for one organization, as a publisher hands it to the log (inside its transaction). */
export type NewEvent = {
  organizationId: number;
  type: EventType;
  payload: Record<string, unknown>;
  hostedSimId?: number | null;
  deviceId?: number | null;
  teamId?: number | null;
  /** Events appended by a job that may run twice: the second append of the same key is dropped. */
  dedupeKey?: string | null;
};

/** An event as the log holds it. `cursor` is also its id (`event_id`, `webhook-id`). */
export type StoredEvent = {
  cursor: string;
  position: Position;
  organizationId: number;
  type: EventType;
  hostedSimId: number | null;
  deviceId: number | null;
  teamId: number | null;
  payload: Record<string, unknown>;
  createdAt: Date;
};

type Row = {
  id: number;
  txid: string;
  organization_id: number;
  type: EventType;
  hosted_sim_id: number | null;
  device_id: number | null;
  team_id: number | null;
  payload: Record<string, unknown>;
  created_at: Date;
};

export const toStoredEvent = (r: Row): StoredEvent => {
  const position = { txid: String(r.txid), id: r.id };
  return {
    cursor: encodeCursor(position),
    position,
    organizationId: r.organization_id,
    type: r.type,
    hostedSimId: r.hosted_sim_id,
    deviceId: r.device_id,
    teamId: r.team_id,
    payload: r.payload,
    createdAt: r.created_at,
  };
};

/**
 * Appends events in the caller's transaction: they become readable when it commits, and never
 * exist if it rolls back. Call `EventTail.notify()` after the commit so readers look at once.
 */
export async function appendEvents(sql: Sql, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e, ord) => ({
    ord,
    organization_id: e.organizationId,
    type: e.type,
    hosted_sim_id: e.hostedSimId ?? null,
    device_id: e.deviceId ?? null,
    team_id: e.teamId ?? null,
    dedupe_key: e.dedupeKey ?? null,
    payload: e.payload,
  }));
  // The events travel as one JSON text (serialised natively), in their order (`ord`: the log's
  // ids follow it), rather than as seven parameters an event: the driver serialised each
  // parameter in JavaScript, and every batch size was a statement of its own to parse and plan
  // (docs/benchmarks.md, session of 2026-11-27 17:38).
  await sql`
    insert into events (organization_id, type, hosted_sim_id, device_id, team_id, dedupe_key, payload)
    select r.organization_id, r.type, r.hosted_sim_id, r.device_id, r.team_id, r.dedupe_key, r.payload
    from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb)
      as r(ord int, organization_id bigint, type text, hosted_sim_id bigint, device_id bigint, team_id bigint, dedupe_key text, payload jsonb)
    order by r.ord
    on conflict (organization_id, type, dedupe_key) where dedupe_key is not null do nothing`;
}

/**
 * The part of a statement that appends events of one `type` from a query, for writers that store
 * a change and its events in one statement (the heartbeat, the offline transition: one round
 * trip, one commit), as a CTE (`came_online as (${appendEventsFrom(sql, type, sql`select ... from moved`)})`).
 * `rows` selects, in this order, organization_id, hosted_sim_id, device_id and the jsonb payload.
 * The only other way into `events` is `appendEvents`; like it, the events are the transaction's.
 */
export function appendEventsFrom(sql: Sql, type: EventType, rows: postgres.Fragment): postgres.Fragment {
  return sql`insert into events (organization_id, type, hosted_sim_id, device_id, payload)
    select r.organization_id, ${type}, r.hosted_sim_id, r.device_id, r.payload
    from (${rows}) as r(organization_id, hosted_sim_id, device_id, payload)`;
}

export type EventFilter = {
  /** Only these organizations' events (always given for a caller; omitted by whole-log readers). */
  organizations?: number[];
  types?: EventType[];
  hostedSimId?: number;
  deviceId?: number;
};

/**
 * Events after `after` in log order, at most `limit`. Only events whose transaction is older
 * than every transaction still running are read (the high-water mark), so an event that commits
 * later always sorts after everything a reader has already seen: a cursor never skips one.
 * The order names the table's columns: a bare `order by txid` would name the selected
 * `txid::text as txid` and sort transaction ids as text ('1000' before '999'), so a reader
 * crossing a power of ten would skip events, and no index could serve the order.
 */
export async function readEvents(sql: Sql, after: Position, filter: EventFilter, limit: number): Promise<StoredEvent[]> {
  const rows = await sql<Row[]>`
    select id, txid::text as txid, organization_id, type, hosted_sim_id, device_id, team_id, payload, created_at
    from events
    where (txid, id) > (${after.txid}::xid8, ${after.id})
      and txid < pg_snapshot_xmin(pg_current_snapshot())
      ${filter.organizations ? sql`and organization_id = any(${filter.organizations}::bigint[])` : sql``}
      ${filter.types ? sql`and type = any(${filter.types}::text[])` : sql``}
      ${filter.hostedSimId === undefined ? sql`` : sql`and hosted_sim_id = ${filter.hostedSimId}`}
      ${filter.deviceId === undefined ? sql`` : sql`and device_id = ${filter.deviceId}`}
    order by events.txid, events.id
    limit ${limit}`;
  return rows.map(toStoredEvent);
}

/**
 * The position "now" names: after every event that is readable at this moment, and before every
 * event of a transaction still running (the high-water mark `readEvents` reads below). It is no
 * event's id (ids start at 1), so it reveals nothing of any organization's events.
 */
export async function highWaterPosition(sql: Sql): Promise<Position> {
  const [row] = await sql<{ xmin: string }[]>`select pg_snapshot_xmin(pg_current_snapshot())::text as xmin`;
  return { txid: row!.xmin, id: 0 };
}

/**
 * Retention: removes up to `chunk` events created before `before` (returns how many went), and
 * moves the log's horizon (the newest position removed, `event_log_horizon`) past them in the same
 * statement, so no cursor before a removed event is taken for a complete one (`removedAfter`).
 */
export async function deleteEventsBefore(sql: Sql, before: Date, chunk = 5000): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    with gone as (
      delete from events where id in (select id from events where created_at < ${before} limit ${chunk}) returning txid, id),
    horizon as (
      insert into event_log_horizon (txid, id)
      select txid, id from gone order by txid desc, id desc limit 1
      on conflict (only_row) do update set txid = excluded.txid, id = excluded.id
      where (event_log_horizon.txid, event_log_horizon.id) < (excluded.txid, excluded.id))
    select count(*)::int as n from gone`;
  return row?.n ?? 0;
}

/** Whether retention removed an event after `p`: a read resuming there would skip it unseen. */
export async function removedAfter(sql: Sql, p: Position): Promise<boolean> {
  const [row] = await sql<{ gone: boolean }[]>`
    select exists (select 1 from event_log_horizon where (txid, id) > (${p.txid}::xid8, ${p.id}::bigint)) as gone`;
  return row?.gone ?? false;
}

/** One event of an organization by its position (its cursor), or null when it is not there (another organization's, or past retention). */
export async function readEventAt(sql: Sql, organizationId: number, at: Position): Promise<StoredEvent | null> {
  const [row] = await sql<Row[]>`
    select id, txid::text as txid, organization_id, type, hosted_sim_id, device_id, team_id, payload, created_at
    from events where id = ${at.id} and txid = ${at.txid}::xid8 and organization_id = ${organizationId}`;
  return row ? toStoredEvent(row) : null;
}

/**
 * An organization's events created in [since, until), in log order, at most `limit`: the events
 * a webhook replay sends again (server/webhooks/replay.ts). `types` null: every type.
 */
export async function readEventsCreatedBetween(
  sql: Sql,
  organizationId: number,
  window: { since: Date; until: Date; types: EventType[] | null },
  limit: number,
): Promise<StoredEvent[]> {
  const rows = await sql<Row[]>`
    select id, txid::text as txid, organization_id, type, hosted_sim_id, device_id, team_id, payload, created_at
    from events
    where organization_id = ${organizationId} and created_at >= ${window.since} and created_at < ${window.until}
      ${window.types ? sql`and type = any(${window.types}::text[])` : sql``}
    order by events.txid, events.id
    limit ${limit}`;
  return rows.map(toStoredEvent);
}
