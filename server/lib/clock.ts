/** A timer made by a clock; only that clock's `clear` ends it. */
export type Timer = { readonly __timer: unique symbol };

/**
 * Time as the server sees it, and the timers that wait for it: real in production, driven by
 * hand in tests (test/fake-clock.ts), so a test moves every wall-time deadline of the server
 * with one call. `unref`: the timer does not keep the process alive.
 */
export type Clock = {
  now(): number;
  setTimeout(fn: () => void, ms: number, opts?: { unref?: boolean }): Timer;
  setInterval(fn: () => void, ms: number, opts?: { unref?: boolean }): Timer;
  /** Ends a timeout or an interval; undefined and already fired timers are ignored. */
  clear(timer: Timer | undefined): void;
};

type NodeTimer = ReturnType<typeof setTimeout>;
const unrefIf = (t: NodeTimer, unref?: boolean) => {
  if (unref) (t as { unref?: () => void }).unref?.();
  return t as unknown as Timer;
};

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms, opts) => unrefIf(setTimeout(fn, ms), opts?.unref),
  setInterval: (fn, ms, opts) => unrefIf(setInterval(fn, ms), opts?.unref),
  // clearTimeout also ends intervals (one timer type in Bun and Node).
  clear: (timer) => clearTimeout(timer as unknown as NodeTimer),
};

export const iso = (ms: number | Date) => new Date(ms).toISOString();

/**
 * One scheduler for every deadline of a kind (device offline timers, alerts, expiries):
 * a single timer of the clock armed for the earliest deadline, not one timer per device; a
 * fake clock fires it when a test moves time past the deadline.
 */
export type Scheduler = {
  /** Runs `fn` once at `at` (ms epoch), replacing any earlier entry with the same key. */
  schedule(key: SchedulerKey, at: number, fn: () => void): void;
  cancel(key: SchedulerKey): void;
  /** When the entry with this key is due, if one is pending. */
  dueAt(key: SchedulerKey): number | undefined;
  size(): number;
  stop(): void;
};

/** Numbers where a key is looked up on a hot path (a device's deadlines on every heartbeat): no string to build and hash. */
export type SchedulerKey = string | number;

type Entry = { key: SchedulerKey; at: number; fn: () => void };

export function createScheduler(clock: Clock): Scheduler & { runDue(): void } {
  // A binary heap of entries; cancelled or replaced entries are skipped lazily.
  const heap: Entry[] = [];
  const live = new Map<SchedulerKey, Entry>();
  let timer: Timer | undefined;
  let armedAt = Number.POSITIVE_INFINITY;

  const less = (a: number, b: number) => heap[a]!.at < heap[b]!.at;
  function push(e: Entry) {
    heap.push(e);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(i, p)) break;
      [heap[i], heap[p]] = [heap[p]!, heap[i]!];
      i = p;
    }
  }
  function pop(): Entry | undefined {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(l, m)) m = l;
        if (r < heap.length && less(r, m)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }
  function peekLive(): Entry | undefined {
    while (heap.length > 0 && live.get(heap[0]!.key) !== heap[0]) pop();
    return heap[0];
  }
  function arm() {
    const next = peekLive();
    if (!next) {
      clock.clear(timer);
      timer = undefined;
      armedAt = Number.POSITIVE_INFINITY;
      return;
    }
    if (timer && armedAt <= next.at) return;
    clock.clear(timer);
    armedAt = next.at;
    timer = clock.setTimeout(
      () => {
        timer = undefined;
        armedAt = Number.POSITIVE_INFINITY;
        runDue();
      },
      Math.max(0, Math.min(next.at - clock.now(), 2 ** 31 - 1)),
      { unref: true },
    );
  }
  function runDue() {
    const now = clock.now();
    for (let e = peekLive(); e && e.at <= now; e = peekLive()) {
      pop();
      live.delete(e.key);
      try {
        e.fn();
      } catch {
        // a deadline's work reports its own errors; the scheduler keeps going
      }
    }
    arm();
  }
  return {
    schedule(key, at, fn) {
      const e = { key, at, fn };
      live.set(key, e);
      push(e);
      arm();
    },
    cancel(key) {
      live.delete(key);
    },
    dueAt: (key) => live.get(key)?.at,
    size: () => live.size,
    stop() {
      clock.clear(timer);
      timer = undefined;
      live.clear();
      heap.length = 0;
    },
    runDue,
  };
}
