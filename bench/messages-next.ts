/**
 * Waiting for a message (issue 17, performance): the time from an SMS injected through the signed
 * provider callback (POST /api/provider/sms, as device-sim/provider.ts does) to the answer of a
 * waiting `GET /api/numbers/{id}/messages/next`.
 *
 *   A. one instance: `--runs` sequential rounds on one number; each starts the wait (after = the
 *      last answered id, timeout 10 s), waits 5 ms so the call is registered as a caller's would
 *      be, then injects; latency from the start of the injection to the wait's answer.
 *   B. the same with the wait on instance A and the SMS into instance B (one database, one Redis).
 *   C. `--waiters` concurrent waits on as many numbers, then one SMS each: all answered, none twice;
 *      instance A's RSS (/proc/<pid>/status) before and while they wait, per waiter.
 *
 * The same-run baselines of A and B: as many rounds against bare Bun servers
 * (bench/events-baseline-server.ts), a held GET released by a POST to the same server, and a held
 * GET on bare A released by a POST to bare B that publishes on Redis (one hop, as the instances
 * wake each other): the HTTP and Redis round trips of this machine, without the callback's
 * signature, the SMS's commit or the message's read.
 *
 *   bun bench/messages-next.ts [--runs 1000] [--waiters 1000]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (a fresh database, dropped afterwards); REDIS_URL
 * (default redis://127.0.0.1:6379) under a unique prefix. Loopback only. Prints a line of figures, then one JSON object.
 */
import { readFileSync } from "node:fs";
import { providerSignature } from "../device-sim/signature";
import { arg, connect, dropDatabase, freshBenchDatabase, load, seedDevices, spawnServer } from "./devices-load";

// Bun's fetch keeps at most 256 requests in flight unless told otherwise; scenario C needs more.
if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
  const self = Bun.spawn([process.execPath, ...process.argv.slice(1)], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" },
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await self.exited);
}

const RUNS = arg("runs", 1000);
const WAITERS = arg("waiters", 1000);
const AUTH_TOKEN = "bench-provider-token";
const METRICS_TOKEN = "bench-metrics-token-0123456";

type Instance = { url: string; proc: { pid: number } };
type Message = { id: number; text: string; hosted_sim_id: number | null };

const dbUrl = await freshBenchDatabase("next");
const env = {
  DATABASE_URL: dbUrl,
  REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  REDIS_PREFIX: `simhost-bench-next-${crypto.randomUUID().slice(0, 8)}:`,
  PROVIDER_AUTH_TOKEN: AUTH_TOKEN,
  METRICS_TOKEN,
};
const a = await spawnServer("server/main.ts", env, "/api/health");
const b = await spawnServer("server/main.ts", env, "/api/health").catch((e) => {
  a.proc.kill();
  throw e;
});
const bareEnv = { BASELINE_REDIS_URL: env.REDIS_URL, BASELINE_CHANNEL: `${env.REDIS_PREFIX}baseline` };
const bare = await Promise.all([
  spawnServer("bench/events-baseline-server.ts", bareEnv, "/ready"),
  spawnServer("bench/events-baseline-server.ts", bareEnv, "/ready"),
]).catch((e) => {
  a.proc.kill();
  b.proc.kill();
  throw e;
});

let sid = 0;
/** The provider's signed callback; the signature covers the URL the server believes it was called on (its PUBLIC_URL). */
async function inject(into: Instance, to: string, body: string) {
  const params = { From: "+15550001111", To: to, Body: body, MessageSid: `SMbench${++sid}`, AccountSid: `AC${"5".repeat(32)}` };
  const url = `${into.url}/api/provider/sms`;
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-provider-signature": providerSignature(AUTH_TOKEN, url, params) },
    body: new URLSearchParams(params).toString(),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`provider callback answered ${res.status}`);
}

async function waitNext(on: Instance, token: string, simId: number, after: number, timeout: number): Promise<Message | null> {
  const res = await fetch(`${on.url}/api/numbers/${simId}/messages/next?after=${after}&timeout=${timeout}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (res.status !== 200) throw new Error(`next answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: Message | null }).data;
}

const pct = (sorted: number[], p: number) => +(sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0).toFixed(2);

/** Scenarios A and B: sequential rounds, one waiter at a time. */
async function sequential(waitOn: Instance, injectInto: Instance, token: string, sim: { id: number; number: string }, runs: number) {
  const latencies: number[] = [];
  let after = await lastId();
  let wrong = 0;
  for (let i = 0; i < runs; i++) {
    const text = `next bench ${waitOn === injectInto ? "one" : "two"} ${i}`;
    const answer = waitNext(waitOn, token, sim.id, after, 10);
    await Bun.sleep(5);
    const t0 = performance.now();
    await inject(injectInto, sim.number, text);
    const message = await answer;
    latencies.push(performance.now() - t0);
    if (message?.text !== text) wrong++;
    if (message) after = message.id;
  }
  latencies.sort((x, y) => x - y);
  return { runs, wrong_or_missing: wrong, p50_ms: pct(latencies, 50), p99_ms: pct(latencies, 99), max_ms: pct(latencies, 100) };
}

/** The baselines of A and B: a held GET on bare A, released by `POST /release` to bare A or `POST /publish` to bare B (over Redis). */
async function bareSequential(releaseOn: Instance, runs: number) {
  const latencies: number[] = [];
  const [holder] = bare;
  const path = releaseOn === holder ? "/release" : "/publish";
  for (let i = 0; i < runs; i++) {
    const answer = fetch(`${holder.url}/hold`).then((r) => r.json());
    await Bun.sleep(5);
    const t0 = performance.now();
    await (await fetch(`${releaseOn.url}${path}`, { method: "POST" })).arrayBuffer();
    await answer;
    latencies.push(performance.now() - t0);
  }
  latencies.sort((x, y) => x - y);
  return { runs, p50_ms: pct(latencies, 50), p99_ms: pct(latencies, 99), max_ms: pct(latencies, 100) };
}

const rssMiB = (pid: number) => +(Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024).toFixed(1);

/** The server's gauge of registered waiters (GET /metrics). */
async function waiting(on: Instance) {
  const text = await (await fetch(`${on.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return Number(/^simhost_message_waiters (\d+)/m.exec(text)?.[1] ?? 0);
}

/** Scenario C: many waiters at once, one message each, injected 50 at a time. */
async function concurrent(token: string, sims: { id: number; number: string }[]) {
  const after = await lastId();
  const rssBefore = rssMiB(a.proc.pid);
  const answers = sims.map((s) => waitNext(a, token, s.id, after, 60).catch((e: Error) => e));
  const deadline = performance.now() + 30_000;
  let registered = 0;
  while ((registered = await waiting(a)) < sims.length && performance.now() < deadline) await Bun.sleep(50);
  const rssWaiting = rssMiB(a.proc.pid);
  const t0 = performance.now();
  for (let i = 0; i < sims.length; i += 50) await Promise.all(sims.slice(i, i + 50).map((s, k) => inject(a, s.number, `next bench many ${i + k}`)));
  const results = await Promise.all(answers);
  const seconds = (performance.now() - t0) / 1000;
  const ids = new Set<number>();
  let answered = 0;
  let twice = 0;
  let wrong = 0;
  let failed = 0;
  results.forEach((r, i) => {
    if (r instanceof Error) failed++;
    else if (r) {
      answered++;
      if (ids.has(r.id)) twice++;
      ids.add(r.id);
      if (r.text !== `next bench many ${i}`) wrong++;
    }
  });
  return {
    waiters: sims.length,
    registered,
    answered,
    answered_twice: twice,
    wrong_message: wrong,
    failed,
    seconds_to_answer_all: +seconds.toFixed(2),
    rss_before_mib: rssBefore,
    rss_waiting_mib: rssWaiting,
    rss_after_mib: rssMiB(a.proc.pid),
    bytes_per_waiter: Math.round(((rssWaiting - rssBefore) * 2 ** 20) / sims.length),
  };
}

const sql = connect(dbUrl);
const lastId = async () => (await sql<{ id: number }[]>`select coalesce(max(id), 0)::int as id from messages`)[0]!.id;
try {
  const { token } = await seedDevices(sql, Math.max(WAITERS, 1));
  const sims = await sql<{ id: number; number: string }[]>`select id::int as id, number from hosted_sims order by id`;
  const loadStart = load();
  // Warm both instances (JIT, caller cache) before measuring.
  await sequential(a, a, token, sims[0]!, 20);
  await sequential(a, b, token, sims[0]!, 20);
  await bareSequential(bare[0], 20);
  await bareSequential(bare[1], 20);
  const oneInstance = await sequential(a, a, token, sims[0]!, RUNS);
  const bareOne = await bareSequential(bare[0], RUNS);
  const twoInstances = await sequential(a, b, token, sims[0]!, RUNS);
  const bareTwo = await bareSequential(bare[1], RUNS);
  const many = await concurrent(token, sims.slice(0, WAITERS));
  console.log(
    `next: one instance p50 ${oneInstance.p50_ms} ms p99 ${oneInstance.p99_ms} ms (bare release p99 ${bareOne.p99_ms} ms); ` +
      `two instances p50 ${twoInstances.p50_ms} ms p99 ${twoInstances.p99_ms} ms (bare release over Redis p99 ${bareTwo.p99_ms} ms); ` +
      `${many.answered}/${many.waiters} waiters answered, ${many.answered_twice} twice, ${many.bytes_per_waiter} bytes/waiter; load ${load().join(", ")}`,
  );
  console.log(
    JSON.stringify(
      {
        runs: RUNS,
        oneInstance,
        twoInstances,
        baseline: { oneInstance: bareOne, twoInstances: bareTwo },
        concurrent: many,
        loadavg_start: loadStart,
        loadavg_end: load(),
      },
      null,
      2,
    ),
  );
} finally {
  await sql.end();
  for (const p of [a, b, ...bare]) p.proc.kill();
  await Promise.all([a, b, ...bare].map((p) => p.proc.exited));
  await dropDatabase(dbUrl);
}
