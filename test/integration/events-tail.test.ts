import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLocalBus } from "../../server/events/bus";
import { ORIGIN } from "../../server/events/cursor";
import { highWaterPosition } from "../../server/events/log";
import { createEventTail } from "../../server/events/tail";
import { createTenant } from "../fixtures";
import { append, testEvent } from "../fixtures-events";
import { createTestContext, type TestContext } from "../helpers";

/**
 * A waiting call skips its first read when the tail says it will hand on every event after the
 * waiter's position (server/events/waiters.ts): that answer must be false whenever an event after
 * the position could have been handed on already, or while the tail is not running.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
}, 60_000);
afterAll(() => ctx.close());

describe("event tail: handsOnAllAfter", () => {
  test("false before start and after stop; after start, true from its position on and false before a handed-on event", async () => {
    const t = await createTenant(ctx.sql);
    const tail = createEventTail({ sql: ctx.sql, bus: createLocalBus("tail-test"), logger: ctx.services.logger });
    const handed: number[] = [];
    tail.onEvents((events) => handed.push(...events.filter((e) => e.organizationId === t.org.id).map((e) => e.position.id)));
    const before = await highWaterPosition(ctx.sql);
    expect(tail.handsOnAllAfter(before)).toBe(false);

    await tail.start();
    try {
      expect(tail.handsOnAllAfter(tail.position())).toBe(true);
      await append(ctx, [testEvent(t.org.id, 1)]);
      // The position before the event: true until the tail hands the event on, false from then on.
      const deadline = performance.now() + 10_000;
      while (handed.length === 0) {
        expect(tail.handsOnAllAfter(before)).toBe(true);
        expect(performance.now()).toBeLessThan(deadline);
        tail.notify();
        await new Promise<void>((resolve) => {
          const off = tail.onEvents(() => {
            off();
            resolve();
          });
        });
      }
      expect(tail.handsOnAllAfter(before)).toBe(false);
      expect(tail.handsOnAllAfter(ORIGIN)).toBe(false);
      expect(tail.handsOnAllAfter(tail.position())).toBe(true);
    } finally {
      await tail.stop();
    }
    expect(tail.handsOnAllAfter(tail.position())).toBe(false);
  }, 30_000);
});
