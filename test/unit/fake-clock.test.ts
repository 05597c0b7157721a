import { describe, expect, test } from "bun:test";
import { createScheduler } from "../../server/lib/clock";
import { createFakeClock } from "../fake-clock";

describe("the fake clock (test/fake-clock.ts)", () => {
  test("timers fire when time is moved past them, in due order, with now() at the new time", () => {
    const clock = createFakeClock(1_000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 200);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 100);
    const cleared = clock.setTimeout(() => fired.push("cleared"), 150);
    clock.clear(cleared);
    clock.advance(99);
    expect(fired).toEqual([]);
    clock.advance(1_000);
    expect(fired).toEqual(["a@2099", "b@2099"]);
    expect(clock.pending()).toBe(0);
  });

  test("an interval fires once per move however many periods it spans, until cleared", () => {
    const clock = createFakeClock(0);
    let n = 0;
    const every = clock.setInterval(() => n++, 1_000);
    clock.advance(999);
    expect(n).toBe(0);
    clock.advance(1);
    expect(n).toBe(1);
    clock.advance(10_000);
    expect(n).toBe(2);
    clock.clear(every);
    clock.advance(10_000);
    expect(n).toBe(2);
  });

  test("a timer due now fires on its own (a wake-up keeps working); setting time back delays what is pending", async () => {
    const clock = createFakeClock(5_000);
    let woke = false;
    clock.setTimeout(() => (woke = true), 0);
    expect(woke).toBe(false);
    await new Promise((r) => setImmediate(r));
    expect(woke).toBe(true);
    let later = false;
    clock.setTimeout(() => (later = true), 1_000);
    clock.set(1_000);
    clock.advance(4_999);
    expect(later).toBe(false);
    clock.advance(1_000);
    expect(later).toBe(true);
  });

  test("a scheduler on the fake clock runs its deadlines when time reaches them, through one timer", () => {
    const clock = createFakeClock(0);
    const scheduler = createScheduler(clock);
    const ran: string[] = [];
    scheduler.schedule("x", 5_000, () => ran.push("x"));
    scheduler.schedule("y", 2_000, () => ran.push("y"));
    scheduler.schedule("z", 3_000, () => ran.push("z"));
    scheduler.cancel("z");
    expect(clock.pending()).toBe(1);
    clock.advance(2_000);
    expect(ran).toEqual(["y"]);
    clock.advance(3_000);
    expect(ran).toEqual(["y", "x"]);
    expect(clock.pending()).toBe(0);
  });
});
