/**
 * Group commit: callers submit one item each and get its own result, while the items that
 * arrive while a batch is being written are written together in the next one. At low load a
 * batch holds one item (no added latency); under load a batch grows, so N concurrent requests
 * cost a handful of round trips instead of N transactions.
 */
export type GroupCommit<T, R> = {
  submit(item: T): Promise<R>;
  /** Resolves once everything submitted so far is written. */
  flush(): Promise<void>;
  pending(): number;
};

type Waiting<T, R> = { item: T; resolve: (r: R) => void; reject: (e: unknown) => void };

export function createGroupCommit<T, R>(write: (items: T[]) => Promise<R[]>, opts: { maxBatch?: number; maxInFlight?: number } = {}): GroupCommit<T, R> {
  const maxBatch = opts.maxBatch ?? 500;
  const maxInFlight = opts.maxInFlight ?? 2;
  let queue: Waiting<T, R>[] = [];
  let inFlight = 0;
  let scheduled = false;
  let idle: Array<() => void> = [];

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
    while (queue.length > 0 && inFlight < maxInFlight) {
      const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch);
      queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch);
      inFlight++;
      void runBatch(batch).finally(() => {
        inFlight--;
        pump();
        settleIdle();
      });
    }
  }

  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          // Let every request of this tick join the batch before writing it.
          queueMicrotask(pump);
        }
      });
    },
    flush() {
      if (queue.length === 0 && inFlight === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
    pending: () => queue.length + inFlight,
  };
}
