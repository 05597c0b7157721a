/** Where the bare baseline posts (bench/webhook-bare.ts): verified, counted apart from the deliveries. */
const BARE = "bare";

type Counted = { distinct: number; duplicates: number; unverified: number };
type FromReceiver =
  | { port: number }
  | { receipts: [string, number, string, number, boolean, number][] }
  | { bare: number; bareUnverified: number }
  | { counted: Counted };

function percentiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const pct = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN);
  return { p50: pct(50), p90: pct(90), p99: pct(99), p999: pct(99.9), max: Math.round(sorted.at(-1) ?? Number.NaN) };
}

/**
 * The benchmarks' webhook receiver, in a process of its own (bench/webhook-receiver-process.ts)
 * so that it takes no CPU from whatever is measured, pipeline or bare baseline alike: every
 * request is verified with the standardwebhooks library against the secret registered for its
 * path; the first receipt of each message (per path) is timed from the moment recorded for its
 * text in `sentAt` (this process's performance.now()), and repeats are counted.
 *
 * `countOnly`: the receiver process counts distinct deliveries and repeats itself and sends no
 * receipts (`counted()` asks for the counts), so a benchmark that needs no latencies (the drain)
 * spends none of the measured process's CPU on the receiver's reports.
 */
export async function startReceiver(opts: { countOnly?: boolean } = {}) {
  const sentAt = new Map<string, number>();
  /** Each first receipt's latency, with the moment its message was sent (this process's performance.now()). */
  const timeline: [sent: number, latency: number][] = [];
  /** From the event's created_at (the appending transaction's start, the database's wall clock) to receipt: the webhook stage alone. */
  const fromEvent: number[] = [];
  const seen = new Set<string>();
  const counts = { duplicates: 0, unverified: 0 };
  let port = 0;
  let bareReply: ((m: { bare: number; bareUnverified: number }) => void) | undefined;
  const countReplies: ((c: Counted) => void)[] = [];
  const ready = Promise.withResolvers<void>();
  const child = Bun.spawn(["bun", `${import.meta.dir}/webhook-receiver-process.ts`, ...(opts.countOnly ? ["--count-only"] : [])], {
    stdout: "inherit",
    stderr: "inherit",
    ipc(m: FromReceiver) {
      if ("port" in m) {
        port = m.port;
        ready.resolve();
      } else if ("receipts" in m) {
        for (const [path, id, text, epochMs, verified, eventAtMs] of m.receipts) {
          if (!verified) counts.unverified++;
          const key = `${path}|${id}`;
          if (seen.has(key)) counts.duplicates++;
          else {
            seen.add(key);
            const sent = sentAt.get(text)!;
            timeline.push([sent, epochMs - performance.timeOrigin - sent]);
            fromEvent.push(epochMs - eventAtMs);
          }
        }
      } else if ("counted" in m) countReplies.shift()?.(m.counted);
      else bareReply?.(m);
    },
  });
  await ready.promise;
  const trust = (path: string, secret: string) => child.send({ trust: path, secret });
  return {
    sentAt,
    seen,
    counts,
    /** Distinct deliveries, repeats and unverified requests so far, counted by the receiver process (`countOnly`). */
    counted: () =>
      new Promise<Counted>((resolve) => {
        countReplies.push(resolve);
        child.send({ count: true });
      }),
    /** The URL for an integration on `path`. */
    endpoint: (path: string) => `http://127.0.0.1:${port}/${path}`,
    /** Deliveries to `path` must verify with `secret`. */
    trust,
    /** Waits until `expected` distinct deliveries arrived or `ms` passed, then a little longer for late repeats. */
    async settle(expected: number, ms = 60_000) {
      const deadline = performance.now() + ms;
      while (seen.size < expected && performance.now() < deadline) await Bun.sleep(50);
      await Bun.sleep(2_000);
    },
    latencyMs: () => percentiles(timeline.map(([, latency]) => latency)),
    /** The latencies by window of `seconds` of sending time: whether they grow during a run or come in bursts. */
    latencyByWindowMs(seconds = 10) {
      const start = Math.min(...timeline.map(([sent]) => sent));
      const windows: number[][] = [];
      for (const [sent, latency] of timeline) (windows[Math.floor((sent - start) / (seconds * 1000))] ??= []).push(latency);
      return windows.map((w, i) => ({ from_s: i * seconds, n: w.length, ...percentiles(w) }));
    },
    /** From each event's created_at to its first receipt (the log, the consumer and the attempt; not the stages before the event). */
    eventToReceiptMs: () => percentiles(fromEvent),
    /**
     * The same-run baseline: bench/webhook-bare.ts in its own process signs and POSTs `count`
     * webhooks to this receiver, `concurrency` at once (each verified there); the best of the
     * concurrencies given is the ceiling the pipeline is compared with. `sample`: a delivery body
     * of the pipeline, whose shape and size every bare body takes (webhook-bare.ts).
     */
    async bare(count: number, concurrencies: number[], sample?: string) {
      const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64")}`;
      trust(BARE, secret);
      const runs: Record<string, number> = {};
      let cpuUs = Number.POSITIVE_INFINITY;
      let bodyBytes = 0;
      for (const c of concurrencies) {
        const proc = Bun.spawn(
          ["bun", `${import.meta.dir}/webhook-bare.ts`, `http://127.0.0.1:${port}/${BARE}`, secret, String(count), String(c), ...(sample ? [sample] : [])],
          {
            stdout: "pipe",
          },
        );
        const out = JSON.parse(await new Response(proc.stdout).text()) as { per_second: number; cpu_us_per_post: number; body_bytes: number };
        runs[`concurrency_${c}`] = out.per_second;
        cpuUs = Math.min(cpuUs, out.cpu_us_per_post);
        bodyBytes = out.body_bytes;
      }
      const checked = await new Promise<{ bare: number; bareUnverified: number }>((resolve) => {
        bareReply = resolve;
        child.send({ bareCount: true });
      });
      return {
        per_second: Math.max(...Object.values(runs)),
        ...runs,
        cpu_us_per_post: cpuUs,
        body_bytes: bodyBytes,
        received: checked.bare,
        unverified: checked.bareUnverified,
      };
    },
    stop: () => child.kill(),
  };
}
