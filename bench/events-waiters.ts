/**
 * Long-polling the event log (issue 16, performance): `--waiters` concurrent
 * `GET /api/events?after=<cursor>&wait=60` calls on one server instance, then one event appended
 * (in a transaction, then `notify` on the bus as every change does); the wake-up latency of each
 * call from the start of the append to its answer, over `--rounds` rounds; the instance's RSS
 * before and while they wait (bytes per waiter). Same run, same client: a bare Bun server holding
 * as many requests and releasing them at once (bench/events-baseline-server.ts).
 *
 *   bun bench/events-waiters.ts [--waiters 1000] [--rounds 5]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (a fresh database, dropped afterwards); REDIS_URL
 * (default redis://127.0.0.1:6379) under a unique prefix. Loopback only. Prints a line of figures,
 * then one JSON object.
 */
import { readFileSync } from "node:fs";
import { createRedisBus } from "../server/events/bus";
import { appendEvents } from "../server/events/log";
import { EVENTS_APPENDED } from "../server/events/tail";
import { createLogger } from "../server/lib/logger";
import { arg, connect, dropDatabase, freshBenchDatabase, load, seedDevices, spawnServer } from "./devices-load";

// Bun's fetch keeps at most 256 requests in flight unless told otherwise.
if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
  const self = Bun.spawn([process.execPath, ...process.argv.slice(1)], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" },
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await self.exited);
}

const WAITERS = arg("waiters", 1000);
const ROUNDS = arg("rounds", 5);
const METRICS_TOKEN = "bench-metrics-token-0123456";
const pct = (sorted: number[], p: number) => +(sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0).toFixed(2);
const rssMiB = (pid: number) => +(Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024).toFixed(1);
const summary = (latencies: number[]) => {
  const sorted = [...latencies].sort((x, y) => x - y);
  return { samples: sorted.length, p50_ms: pct(sorted, 50), p99_ms: pct(sorted, 99), max_ms: pct(sorted, 100) };
};

async function until(check: () => Promise<boolean>, what: string) {
  const deadline = performance.now() + 60_000;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const dbUrl = await freshBenchDatabase("events");
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `simhost-bench-events-${crypto.randomUUID().slice(0, 8)}:`;
const server = await spawnServer(
  "server/main.ts",
  { DATABASE_URL: dbUrl, REDIS_URL: redisUrl, REDIS_PREFIX: prefix, METRICS_TOKEN, WORKERS: "0" },
  "/api/health",
);
const baseline = await spawnServer("bench/events-baseline-server.ts", {}, "/ready").catch((e) => {
  server.proc.kill();
  throw e;
});
const sql = connect(dbUrl);
// The bench appends as a change on another instance would: commit, then wake every instance's tail over Redis.
const bus = createRedisBus({ url: redisUrl, prefix, origin: "bench", logger: createLogger("error") });

type Page = { data: { id: string; data: { n?: number } }[]; meta: { next_cursor: string } };

const waitingOnServer = async () => {
  const text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return Number(/^simhost_event_waiters (\d+)/m.exec(text)?.[1] ?? 0);
};

/** One round on simhost: all waiters registered, one event appended; each call's latency from the append's start. */
async function simhostRound(token: string, orgId: number, cursor: string, n: number) {
  let t0 = 0;
  const latencies: number[] = [];
  let wrong = 0;
  let next = cursor;
  const calls = Array.from({ length: WAITERS }, async () => {
    const res = await fetch(`${server.url}/api/events?after=${cursor}&wait=60`, { headers: { authorization: `Bearer ${token}` } });
    const page = (await res.json()) as Page;
    latencies.push(performance.now() - t0);
    if (res.status !== 200 || page.data.length !== 1 || page.data[0]!.data.n !== n) wrong++;
    else next = page.meta.next_cursor;
  });
  await until(async () => (await waitingOnServer()) === WAITERS, `${WAITERS} waiters`);
  const rssWaiting = rssMiB(server.proc.pid);
  t0 = performance.now();
  await sql.begin((tx) => appendEvents(tx, [{ organizationId: orgId, type: "webhook.test", payload: { n } }]));
  const committedMs = performance.now() - t0;
  bus.publish(EVENTS_APPENDED, "appended", null);
  await Promise.all(calls);
  return { latencies, wrong, next, rssWaiting, committedMs };
}

/** One round on the bare server: all requests held, then released at once. */
async function baselineRound() {
  let t0 = 0;
  const latencies: number[] = [];
  const calls = Array.from({ length: WAITERS }, async () => {
    await (await fetch(`${baseline.url}/hold`)).json();
    latencies.push(performance.now() - t0);
  });
  await until(async () => ((await (await fetch(`${baseline.url}/held`)).json()) as { held: number }).held === WAITERS, `${WAITERS} held`);
  const rssWaiting = rssMiB(baseline.proc.pid);
  t0 = performance.now();
  await fetch(`${baseline.url}/release`, { method: "POST" });
  await Promise.all(calls);
  return { latencies, rssWaiting };
}

try {
  await bus.ready();
  const { token } = await seedDevices(sql, 1);
  const [org] = await sql<{ id: number }[]>`select id::int as id from organizations order by id desc limit 1`;
  const loadStart = load();
  let cursor = ((await (await fetch(`${server.url}/api/events?after=now`, { headers: { authorization: `Bearer ${token}` } })).json()) as Page).meta.next_cursor;
  const rssBefore = { simhost: rssMiB(server.proc.pid), baseline: rssMiB(baseline.proc.pid) };
  const rssWaiting = { simhost: 0, baseline: 0 };
  const simhost: number[] = [];
  const bare: number[] = [];
  const commits: number[] = [];
  let wrong = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    // Round 0 warms both up (JIT, connections, caller cache) and is not counted.
    const s = await simhostRound(token, org!.id, cursor, round);
    const b = await baselineRound();
    cursor = s.next;
    if (round === 0) continue;
    simhost.push(...s.latencies);
    bare.push(...b.latencies);
    commits.push(s.committedMs);
    wrong += s.wrong;
    rssWaiting.simhost = Math.max(rssWaiting.simhost, s.rssWaiting);
    rssWaiting.baseline = Math.max(rssWaiting.baseline, b.rssWaiting);
  }
  const perWaiter = (k: "simhost" | "baseline") => Math.round(((rssWaiting[k] - rssBefore[k]) * 2 ** 20) / WAITERS);
  const result = {
    waiters: WAITERS,
    rounds: ROUNDS,
    simhost: {
      ...summary(simhost),
      wrong_or_missing: wrong,
      append_commit_p50_ms: summary(commits).p50_ms,
      rss_before_mib: rssBefore.simhost,
      rss_waiting_mib: rssWaiting.simhost,
      bytes_per_waiter: perWaiter("simhost"),
    },
    baseline: { ...summary(bare), rss_before_mib: rssBefore.baseline, rss_waiting_mib: rssWaiting.baseline, bytes_per_held_request: perWaiter("baseline") },
    loadavg_start: loadStart,
    loadavg_end: load(),
  };
  console.log(
    `events wait: ${WAITERS} waiters × ${ROUNDS} rounds, wake-up p50 ${result.simhost.p50_ms} ms p99 ${result.simhost.p99_ms} ms (bare Bun release p50 ${result.baseline.p50_ms} ms p99 ${result.baseline.p99_ms} ms); ` +
      `${result.simhost.bytes_per_waiter} bytes/waiter (bare ${result.baseline.bytes_per_held_request}); ${wrong} wrong; load ${loadStart.join(", ")} → ${result.loadavg_end.join(", ")}`,
  );
  console.log(JSON.stringify(result, null, 2));
} finally {
  await bus.close();
  await sql.end();
  server.proc.kill();
  baseline.proc.kill();
  await Promise.all([server.proc.exited, baseline.proc.exited]);
  await dropDatabase(dbUrl);
}
