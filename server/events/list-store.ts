import type { Sql } from "../db/client";
import type { Position } from "./cursor";
import { type EventFilter, readEvents, type StoredEvent } from "./log";

/** One page of the log after `after`: at most `limit` events, and whether more follow at once. */
export async function readEventPage(sql: Sql, after: Position, filter: EventFilter, limit: number): Promise<{ events: StoredEvent[]; hasMore: boolean }> {
  const events = await readEvents(sql, after, filter, limit + 1);
  return { events: events.slice(0, limit), hasMore: events.length > limit };
}
