import { afterAll, beforeAll, expect, test } from "bun:test";
import { systemClock } from "../../server/lib/clock";
import { createLogger } from "../../server/lib/logger";
import { createLogConsumer } from "../../server/webhooks/consumer";
import type { LiveItem } from "../../server/webhooks/dispatcher";
import { createTenant } from "../fixtures";
import { eventually } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";
import { createHook, createNumber, createTeam, receiveSms } from "./webhooks-helpers";

/**
 * The log consumer alone (the services not started: no other consumer on the database), with a
 * short lease that it does not renew: a process stalled past its lease (paused, starved) may
 * have lost the consumer to another instance, which delivers the same events.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
}, 60_000);
afterAll(async () => {
  await ctx?.close();
});

test("a consumer whose lease lapsed gives up what it read (its deliveries no longer its own, the waiting ones forgotten) and reads it again once it holds the consumer", async () => {
  const delivered: LiveItem[] = [];
  let abandoned = 0;
  const consumer = createLogConsumer({
    sql: ctx.sql,
    events: ctx.services.events,
    clock: systemClock,
    logger: createLogger("silent"),
    owner: "stalled-owner",
    disableAfterSeconds: 86_400,
    deliver: (items) => delivered.push(...items),
    abandon: () => abandoned++,
    // Held for 2 s (surely for 1 s), never renewed: the lease lapses as in a stall.
    timing: { leaseSeconds: 2, renewMs: 3_600_000, pollMs: 20 },
  });
  const a = await createTenant(ctx.sql);
  const team = await createTeam(ctx.sql, a.org.id);
  const sim = await createNumber(ctx.sql, [{ orgId: a.org.id, teamId: team.id }]);
  await createHook(ctx, a.token, { url: "http://127.0.0.1:9/unused" }, [{ teamId: team.id, mode: "always" }]);
  await consumer.start();
  try {
    const { messageId } = await receiveSms(ctx, sim.id, "read before the stall");
    const first = await eventually(() => delivered.find((i) => i.delivery.message_id === messageId), 10_000, "the delivery read");
    expect(first.owned()).toBe(true);
    expect(abandoned).toBe(0);
    // Past the lease it surely held: from then on nothing of what it read is its own to attempt or record.
    await eventually(() => !first.owned(), 10_000, "the lease lapsed");
    expect(abandoned).toBe(1);
    // It claims the consumer again and reads from the durable position: the same event, its own again.
    const again = await eventually(() => delivered.find((i) => i !== first && i.delivery.message_id === messageId), 10_000, "the event read again");
    expect(again.owned()).toBe(true);
    expect(first.owned()).toBe(false);
  } finally {
    await consumer.stop();
    await consumer.release();
  }
}, 30_000);
