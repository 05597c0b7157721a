import { Webhook } from "standardwebhooks";

/**
 * The benchmarks' webhook receiver on a local port: every request is verified with the
 * standardwebhooks library against the secret registered for its path; the first receipt of
 * each message (per path) is timed from the moment recorded for its text in `sentAt`, and
 * repeats are counted.
 */
export function startReceiver() {
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  const seen = new Set<string>();
  const secrets = new Map<string, Webhook>();
  const counts = { duplicates: 0, unverified: 0 };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      const hook = secrets.get(new URL(req.url).pathname.slice(1));
      try {
        hook!.verify(body, Object.fromEntries(req.headers));
      } catch {
        counts.unverified++;
      }
      const event = JSON.parse(body);
      const key = `${req.url}|${event.data.id}`;
      if (seen.has(key)) counts.duplicates++;
      else {
        seen.add(key);
        latencies.push(performance.now() - sentAt.get(event.data.text)!);
      }
      return new Response("ok");
    },
  });
  return {
    sentAt,
    seen,
    counts,
    /** The URL for an integration on `path`. */
    endpoint: (path: string) => `http://127.0.0.1:${server.port}/${path}`,
    /** Deliveries to `path` must verify with `secret`. */
    trust: (path: string, secret: string) => void secrets.set(path, new Webhook(secret)),
    /** Waits until `expected` distinct deliveries arrived or `ms` passed, then a little longer for late repeats. */
    async settle(expected: number, ms = 60_000) {
      const deadline = performance.now() + ms;
      while (seen.size < expected && performance.now() < deadline) await Bun.sleep(50);
      await Bun.sleep(2_000);
    },
    latencyMs() {
      const sorted = [...latencies].sort((a, b) => a - b);
      const pct = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN);
      return { p50: pct(50), p90: pct(90), p99: pct(99), p999: pct(99.9), max: Math.round(sorted.at(-1) ?? Number.NaN) };
    },
    stop: () => server.stop(true),
  };
}
