/**
 * Counters, error classes and latencies of a run. Latencies are kept raw (a fleet run makes
 * at most a few hundred thousand requests), so percentiles are exact, not estimated.
 */
export type Stats = ReturnType<typeof createStats>;

export type LatencySummary = { count: number; p50: number; p95: number; p99: number; max: number };

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  // Nearest-rank: the smallest value with at least p% of the samples at or below it.
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function summarize(samples: number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? 0),
  };
}

export function createStats() {
  const latencies = new Map<string, number[]>();
  const errors = new Map<string, number>();
  const counters = new Map<string, number>();
  return {
    observe(operation: string, ms: number) {
      let list = latencies.get(operation);
      if (!list) latencies.set(operation, (list = []));
      list.push(ms);
    },
    /** An error class is the operation and what went wrong: "sms 503 unavailable", "heartbeat network". */
    error(operation: string, kind: string) {
      const key = `${operation} ${kind}`;
      errors.set(key, (errors.get(key) ?? 0) + 1);
    },
    count(name: string, by = 1) {
      counters.set(name, (counters.get(name) ?? 0) + by);
    },
    get: (name: string) => counters.get(name) ?? 0,
    errorTotal: () => [...errors.values()].reduce((a, b) => a + b, 0),
    latency: (operation: string) => summarize(latencies.get(operation) ?? []),
    latencies: () => Object.fromEntries([...latencies.keys()].sort().map((op) => [op, summarize(latencies.get(op)!)])),
    errors: () => Object.fromEntries([...errors.entries()].sort((a, b) => b[1] - a[1])),
    counters: () => Object.fromEntries([...counters.entries()].sort()),
  };
}
