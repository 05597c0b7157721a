/** Time as the server sees it. Real in production, driven by hand in tests. */
export type Clock = { now(): number };

export const systemClock: Clock = { now: () => Date.now() };

export const iso = (ms: number | Date) => new Date(ms).toISOString();

/**
 * One scheduler for every deadline of a kind (device offline timers, alerts, expiries):
 * a single timer armed for the earliest deadline, not one timer per device. `advance`
 * lets tests drive it with a fake clock.
 */
export type Scheduler = {
  /** Runs `fn` once at `at` (ms epoch), replacing any earlier entry with the same key. */
  schedule(key: string, at: number, fn: () => void): void;
  cancel(key: string): void;
  /** When the entry with this key is due, if one is pending. */
  dueAt(key: string): number | undefined;
  size(): number;
  stop(): void;
};

type Entry = { key: string; at: number; fn: () => void };

export function createScheduler(clock: Clock, opts: { realTimers?: boolean } = {}): Scheduler & { runDue(): void } {
  // A binary heap of entries; cancelled or replaced entries are skipped lazily.
  const heap: Entry[] = [];
  const live = new Map<string, Entry>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let armedAt = Number.POSITIVE_INFINITY;
  const realTimers = opts.realTimers ?? true;

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
    if (!realTimers) return;
    const next = peekLive();
    if (!next) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      armedAt = Number.POSITIVE_INFINITY;
      return;
    }
    if (timer && armedAt <= next.at) return;
    if (timer) clearTimeout(timer);
    armedAt = next.at;
    timer = setTimeout(
      () => {
        timer = undefined;
        armedAt = Number.POSITIVE_INFINITY;
        runDue();
      },
      Math.max(0, Math.min(next.at - clock.now(), 2 ** 31 - 1)),
    );
    (timer as { unref?: () => void }).unref?.();
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
      if (timer) clearTimeout(timer);
      timer = undefined;
      live.clear();
      heap.length = 0;
    },
    runDue,
  };
}

/** A clock tests move by hand; `advance` also runs what came due on its schedulers. */
export function createFakeClock(start = Date.parse("2026-01-01T00:00:00.000Z")) {
  let t = start;
  const schedulers: Array<{ runDue(): void }> = [];
  return {
    now: () => t,
    set(ms: number) {
      t = ms;
      for (const s of schedulers) s.runDue();
    },
    advance(ms: number) {
      t += ms;
      for (const s of schedulers) s.runDue();
    },
    attach(s: { runDue(): void }) {
      schedulers.push(s);
    },
  };
}
