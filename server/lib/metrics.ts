import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Prometheus metrics of one server instance (GET /metrics). Gauges are read on scrape. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpRequests = new Histogram({
    name: "simhost_http_request_duration_seconds",
    help: "HTTP requests by method, route and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
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
  return { registry, httpRequests, webhookDeliveries, wsMessages, gauge };
}

export type Metrics = ReturnType<typeof createMetrics>;
