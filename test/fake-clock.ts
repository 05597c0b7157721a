import type { Clock, Timer } from "../server/lib/clock";

type Pending = { id: number; at: number; fn: () => void; every?: number };

export type FakeClock = Clock & {
  /** Jumps to `ms` (forwards or backwards), then fires every timer due by then. */
  set(ms: number): void;
  /** Moves time on by `ms` in one step, then fires every timer due by then. */
  advance(ms: number): void;
  /** Timers waiting (timeouts not yet fired, intervals not cleared). */
  pending(): number;
};

/**
 * The one fake clock of the test suite: the server's wall time and every timer made through
 * it, moved by hand. Time moves in jumps (as after an NTP step or a VM resume): timers due by
 * the new time fire in the order of their due times, with `now()` already at the new time; an
 * interval fires once per jump however many periods it spans. A timer due at the current time
 * (a zero delay, a wake-up) fires on the next real macrotask, as a real one would, so code that
 * wakes itself keeps running; later ones wait until a test moves time past them.
 */
export function createFakeClock(start = Date.parse("2026-01-01T00:00:00.000Z")): FakeClock {
  let t = start;
  let nextId = 1;
  const timers = new Map<number, Pending>();
  let flushQueued = false;

  function fireDue() {
    for (;;) {
      let due: Pending | undefined;
      for (const p of timers.values()) if (p.at <= t && (!due || p.at < due.at || (p.at === due.at && p.id < due.id))) due = p;
      if (!due) return;
      if (due.every === undefined) timers.delete(due.id);
      else due.at = t + due.every;
      due.fn();
    }
  }
  function queueFlush() {
    if (flushQueued) return;
    flushQueued = true;
    setImmediate(() => {
      flushQueued = false;
      fireDue();
    });
  }
  function add(fn: () => void, ms: number, every?: number): Timer {
    const id = nextId++;
    const at = t + Math.max(0, ms);
    timers.set(id, { id, at, fn, every });
    if (at <= t) queueFlush();
    return id as unknown as Timer;
  }

  return {
    now: () => t,
    setTimeout: (fn, ms) => add(fn, ms),
    setInterval: (fn, ms) => add(fn, ms, Math.max(1, ms)),
    clear(timer) {
      if (timer !== undefined) timers.delete(timer as unknown as number);
    },
    set(ms) {
      t = ms;
      fireDue();
    },
    advance(ms) {
      t += ms;
      fireDue();
    },
    pending: () => timers.size,
  };
}
