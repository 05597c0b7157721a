/**
 * Group commit: callers submit one item each and get its own result, while the items that
 * arrive while a batch is being written are written together in the next one. At low load a
 * batch holds one item (no added latency); under load a batch grows, so N concurrent requests
 * cost a handful of round trips instead of N transactions.
 */
export type GroupCommit<T, R> = {
  submit(item: T): Promise<R>;
  /**
   * Like submit, but an item with the same key still waiting for its batch is replaced by this
   * one, and null comes back: the earlier caller's promise stands for both.
   */
  submitLatest(key: unknown, item: T): Promise<R> | null;
  /** Writes what waits at once (no linger) and resolves once everything submitted so far is written. */
  flush(): Promise<void>;
  pending(): number;
};

type Waiting<T, R> = { item: T; key?: unknown; resolve: (r: R) => void; reject: (e: unknown) => void };

/**
 * `lingerMs`: a batch starts at least this long after the one before it, so items that nobody
 * waits on pile up into fewer, larger writes (and repeated items can be merged by `write`). A
 * full batch (`maxBatch` waiting) does not linger: waiting could not make it larger. `flush()`
 * ends a linger: what waits is written at once.
 */
export function createGroupCommit<T, R>(
  write: (items: T[]) => Promise<R[]>,
  opts: { maxBatch?: number; maxInFlight?: number; lingerMs?: number } = {},
): GroupCommit<T, R> {
  const maxBatch = opts.maxBatch ?? 500;
  const maxInFlight = opts.maxInFlight ?? 2;
  const lingerMs = opts.lingerMs ?? 0;
  let queue: Waiting<T, R>[] = [];
  let inFlight = 0;
  let scheduled = false;
  let idle: Array<() => void> = [];
  let lastStart = Number.NEGATIVE_INFINITY;
  let lingering: ReturnType<typeof setTimeout> | undefined;
  const waitingByKey = new Map<unknown, Waiting<T, R>>();

  function settleIdle() {
    if (queue.length > 0 || inFlight > 0) return;
    const waiters = idle;
    idle = [];
    for (const w of waiters) w();
  }

  async function runBatch(batch: Waiting<T, R>[]) {
    try {
      const results = await write(batch.map((b) => b.item));
      for (const [i, b] of batch.entries()) b.resolve(results[i] as R);
    } catch (e) {
      for (const b of batch) b.reject(e);
    }
  }

  function pump() {
    scheduled = false;
    const wait = lastStart + lingerMs - performance.now();
    // Linger unless a full batch waits or a flush does.
    const linger = queue.length > 0 && queue.length < maxBatch && idle.length === 0 && wait > 0;
    if (lingering) {
      if (linger) return;
      clearTimeout(lingering);
      lingering = undefined;
    }
    if (linger) {
      lingering = setTimeout(() => {
        lingering = undefined;
        pump();
      }, wait);
      return;
    }
    while (queue.length > 0 && inFlight < maxInFlight) {
      lastStart = performance.now();
      const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch);
      queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch);
      if (waitingByKey.size > 0) for (const b of batch) if (b.key !== undefined) waitingByKey.delete(b.key);
      inFlight++;
      void runBatch(batch).finally(() => {
        inFlight--;
        pump();
        settleIdle();
      });
    }
  }

  function enqueue(item: T, key?: unknown) {
    return new Promise<R>((resolve, reject) => {
      const waiting: Waiting<T, R> = { item, key, resolve, reject };
      queue.push(waiting);
      if (key !== undefined) waitingByKey.set(key, waiting);
      if (!scheduled) {
        scheduled = true;
        // Let every request of this tick join the batch before writing it.
        queueMicrotask(pump);
      }
    });
  }

  return {
    submit: (item) => enqueue(item),
    submitLatest(key, item) {
      const waiting = waitingByKey.get(key);
      if (!waiting) return enqueue(item, key);
      waiting.item = item;
      return null;
    },
    flush() {
      if (queue.length === 0 && inFlight === 0) return Promise.resolve();
      const written = new Promise<void>((resolve) => idle.push(resolve));
      if (lingering) pump();
      return written;
    },
    pending: () => queue.length + inFlight,
  };
}
