/**
 * The webhook benchmarks' same-run baseline: a bare Bun process that signs Standard Webhooks
 * style (server/webhooks/signing.ts, the server's own signer) and POSTs to the benchmark's
 * receiver, `concurrency` requests at once, with nothing else: no database, no queue, no log.
 * Each body is built (JSON.stringify) from `sample`, a delivery body of the pipeline measured
 * beside it, under a new id: the same bytes to sign and send per request as the pipeline's, so
 * the ceiling is the one for those deliveries (without a sample, a small body of about 110 bytes).
 *
 *   bun bench/webhook-bare.ts <url> <secret> <count> <concurrency> [sample]
 *       prints {"posted": n, "per_second": r, "cpu_us_per_post": c, "body_bytes": b}
 *
 * `cpu_us_per_post`: this process's CPU time (user + system) per POST, far less sensitive to a
 * busy machine than the rate.
 */
import { signatureHeaders } from "../server/webhooks/signing";

const [url, secret, countArg, concurrencyArg, sampleArg] = process.argv.slice(2);
const sample = sampleArg ? (JSON.parse(sampleArg) as Record<string, unknown>) : undefined;
const bodyOf = (id: string, i: number) =>
  JSON.stringify(sample ? { ...sample, id } : { id, type: "message.received", created_at: new Date().toISOString(), data: { id: i, text: `bare ${i}` } });
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
let next = 0;
let posted = 0;
const start = performance.now();
const cpu = process.cpuUsage();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++;
      const id = `evt_bare_${i}`;
      const body = bodyOf(id, i);
      const res = await fetch(url!, {
        method: "POST",
        headers: { "content-type": "application/json", ...signatureHeaders(secret!, id, body, Date.now()) },
        body,
      });
      await res.text();
      if (res.ok) posted++;
    }
  }),
);
const seconds = (performance.now() - start) / 1000;
const used = process.cpuUsage(cpu);
console.log(
  JSON.stringify({
    posted,
    per_second: Math.round(posted / seconds),
    cpu_us_per_post: Math.round((used.user + used.system) / posted),
    body_bytes: Buffer.byteLength(bodyOf("evt_bare_0", 0)),
  }),
);
