import { ORIGIN } from "../server/events/cursor";
import { appendEvents, type NewEvent, readEvents, type StoredEvent } from "../server/events/log";
import type { Delivery } from "../server/realtime/hub";
import type { Services } from "../server/services";

/** Every realtime delivery an instance makes from the log (channel, event name, data with event_id, organization). */
export function watchRealtime(services: Pick<Services, "realtime">): Delivery[] {
  const seen: Delivery[] = [];
  services.realtime.watch((d) => seen.push(d));
  return seen;
}

/** Appends events as a publisher would (its own transaction) and wakes every instance. */
export async function raiseEvents(services: Pick<Services, "sql" | "events">, events: NewEvent[]) {
  await services.sql.begin((tx) => appendEvents(tx, events));
  services.events.notify();
}

/**
 * The log rows of some organizations (oldest first), optionally of one type, once there are at
 * least `min`: the log is read below the oldest running transaction (server/events/log.ts), so a
 * row committed a moment ago may need another transaction elsewhere to end first.
 */
export async function logRows(services: Pick<Services, "sql">, organizations: number[], type?: StoredEvent["type"], min = 0) {
  const read = () => readEvents(services.sql, ORIGIN, { organizations, types: type ? [type] : undefined }, 10_000);
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = await read();
    if (rows.length >= min || Date.now() > deadline) return rows;
    await Bun.sleep(20);
  }
}
