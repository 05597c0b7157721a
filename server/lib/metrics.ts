import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from "prom-client";

/** prom-client's default metrics that walk the heap in Bun (see createMetrics). */
export const HEAP_SPACE_METRICS = ["nodejs_heap_space_size_total_bytes", "nodejs_heap_space_size_used_bytes", "nodejs_heap_space_size_available_bytes"];

/** Prometheus metrics of one server instance (GET /metrics). Gauges are read on scrape. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Bun answers the heap-space figures with a census of the whole heap: about 100 ms per million
  // objects, during which the server serves nothing, at every scrape. The heap totals stay.
  for (const name of HEAP_SPACE_METRICS) registry.removeSingleMetric(name);
  const observeRequest = requestHistogram(registry, {
    name: "simhost_http_request_duration_seconds",
    help: "HTTP requests by method, route and status",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
  const webhookDeliveries = new Counter({
    name: "simhost_webhook_deliveries_total",
    help: "Webhook delivery attempts by outcome",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const wsMessages = new Counter({
    name: "simhost_ws_messages_total",
    help: "WebSocket messages by direction",
    labelNames: ["direction"],
    registers: [registry],
  });
  /** Gauges whose value is computed at scrape time, registered by the feature that knows it. */
  function gauge(name: string, help: string, read: () => number | Promise<number>) {
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        this.set(await read());
      },
    });
  }
  return { registry, observeRequest, webhookDeliveries, wsMessages, gauge };
}

export type Metrics = ReturnType<typeof createMetrics>;

type Series = { labels: { method: string; route: string; status: string }; counts: Float64Array; sum: number; count: number };

/**
 * The request-duration histogram, observed on every request: an observation is a lookup by one
 * string and an array increment (prom-client's Histogram builds, checks and hashes a label
 * object on each), and a scrape renders what prom-client's would (cumulative `le` buckets,
 * `+Inf`, `_sum`, `_count`).
 */
function requestHistogram(registry: Registry, o: { name: string; help: string; buckets: number[] }) {
  // By route, method and status: no key string built (and hashed) per request.
  const byRoute = new Map<string, Map<string, Map<number, Series>>>();
  const series = { values: () => [...byRoute.values()].flatMap((m) => [...m.values()].flatMap((s) => [...s.values()])), clear: () => byRoute.clear() };
  const { name, help, buckets } = o;
  const get = async () => ({
    name,
    help,
    type: "histogram",
    aggregator: "sum",
    // `le` first and the series' labels after it (prom-client's `sharedLabels`), as prom-client writes them.
    values: [...series.values()].flatMap((s) => {
      const row = (le: number | string | undefined, value: number, suffix: string) => ({
        labels: le === undefined ? {} : { le },
        sharedLabels: s.labels,
        value,
        metricName: `${name}${suffix}`,
      });
      let total = 0;
      return [
        ...buckets.map((le, i) => row(le, (total += s.counts[i]!), "_bucket")),
        row("+Inf", s.count, "_bucket"),
        row(undefined, s.sum, "_sum"),
        row(undefined, s.count, "_count"),
      ];
    }),
  });
  registry.registerMetric({ name, help, get, reset: () => series.clear() } as unknown as Metric);
  return function observe(method: string, route: string, status: number, seconds: number) {
    let byMethod = byRoute.get(route);
    if (!byMethod) byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (!s) byStatus.set(status, (s = { labels: { method, route, status: String(status) }, counts: new Float64Array(buckets.length), sum: 0, count: 0 }));
    let i = 0;
    while (i < buckets.length && seconds > buckets[i]!) i++;
    if (i < buckets.length) s.counts[i]! += 1;
    s.sum += seconds;
    s.count += 1;
  };
}
