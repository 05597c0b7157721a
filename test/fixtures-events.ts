import { expect } from "bun:test";
import type { EventType } from "../server/events/catalog";
import { ORIGIN } from "../server/events/cursor";
import { appendEvents, type NewEvent, readEvents, type StoredEvent } from "../server/events/log";
import type { Delivery } from "../server/realtime/hub";
import type { Services } from "../server/services";
import { eventually } from "./fixtures-numbers";
import type { TestContext } from "./helpers";

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

/** An event as a publisher would append it; `n` tells test events apart. */
export const testEvent = (organizationId: number, n: number, opts: Partial<NewEvent> & { type?: EventType } = {}): NewEvent => ({
  organizationId,
  type: "webhook.test",
  payload: { n },
  ...opts,
});

/** Whether the events of transaction `txid` can be read now (no write transaction that began before it still runs). */
export const isReadable = async (sql: TestContext["sql"], txid: string) =>
  (await sql<{ readable: boolean }[]>`select ${txid}::xid8 < pg_snapshot_xmin(pg_current_snapshot()) as readable`)[0]!.readable;

/**
 * Appends in one transaction, as a change does, then wakes every instance's tail (`notify`).
 * `readable`: whether the events could be read at once after the commit. They cannot while a
 * write transaction that began earlier still runs anywhere on the PostgreSQL server (another
 * test process migrating its database, for one): the log holds them back until it ends, so a
 * test measuring wake-up latency only counts appends that were readable at once.
 */
export async function appendAndNotify(ctx: Pick<TestContext, "sql" | "services">, events: NewEvent[]): Promise<{ txid: string; readable: boolean }> {
  const txid = await ctx.sql.begin(async (tx) => {
    await appendEvents(tx, events);
    const [row] = await tx<{ txid: string }[]>`select pg_current_xact_id()::text as txid`;
    return row!.txid;
  });
  const readable = await isReadable(ctx.sql, txid);
  ctx.services.events.notify();
  return { txid, readable };
}

/**
 * Appends like `appendAndNotify`, then waits until the events are readable: a transaction of
 * someone else that began before this one and still runs holds them back (docs/events.md).
 */
export async function append(ctx: Pick<TestContext, "sql" | "services">, events: NewEvent[]): Promise<void> {
  const { txid } = await appendAndNotify(ctx, events);
  await eventually(() => isReadable(ctx.sql, txid), 30_000, "the appended events to be readable");
}

export type EventPageBody = {
  data: { id: string; type: EventType; created_at: string; organization_id: number; data: Record<string, unknown> }[];
  meta: { next_cursor: string; per_page: number; has_more: boolean };
};

/**
 * Wake-up latency on a shared machine: runs `round(i)`, which answers how long its measured step
 * took (or null when it could not be timed fairly: events held back by an older transaction),
 * until `needed` rounds came in under `limitMs`. The heap is collected before each round, and up
 * to `late` rounds past the limit are reported and run again: in CI the test process shares 2
 * cores with the other half of the suite and carries the heap of every file before it, and a
 * collection or a descheduling there is not the server's latency. A tail that missed its wake
 * answers at its idle read (TAIL_TIMING.idleMs, 1 s), within 100 ms in about one round of ten:
 * three rounds of at most five, less than once in a hundred runs.
 */
export async function timedRounds(o: { needed: number; limitMs: number; late?: number; maxRounds?: number }, round: (i: number) => Promise<number | null>) {
  let late = 0;
  let timed = 0;
  for (let i = 0; timed < o.needed; i++) {
    expect(i).toBeLessThan(o.maxRounds ?? 12);
    Bun.gc(true);
    const ms = await round(i);
    if (ms === null) continue;
    if (ms < o.limitMs) timed++;
    else {
      late++;
      console.warn(`round ${i}: ${Math.round(ms)} ms, past ${o.limitMs} ms; measured again`);
      expect(late).toBeLessThanOrEqual(o.late ?? 2);
    }
  }
}
