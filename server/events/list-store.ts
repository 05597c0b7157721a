import type { Sql } from "../db/client";
import type { Position } from "./cursor";
import { type EventFilter, readEvents, type StoredEvent } from "./log";

/**
 * The position "now" names: after every event that is readable at this moment, and before every
 * event of a transaction still running (the high-water mark of log.ts `readEvents`). It is no
 * event's id (ids start at 1), so it reveals nothing of any organization's events.
 */
export async function highWaterPosition(sql: Sql): Promise<Position> {
  const [row] = await sql<{ xmin: string }[]>`select pg_snapshot_xmin(pg_current_snapshot())::text as xmin`;
  return { txid: row!.xmin, id: 0 };
}

/** One page of the log after `after`: at most `limit` events, and whether more follow at once. */
export async function readEventPage(sql: Sql, after: Position, filter: EventFilter, limit: number): Promise<{ events: StoredEvent[]; hasMore: boolean }> {
  const events = await readEvents(sql, after, filter, limit + 1);
  return { events: events.slice(0, limit), hasMore: events.length > limit };
}
