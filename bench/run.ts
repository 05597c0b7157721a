/**
 * `bun run bench [--quick] [--only <name>[,<name>...]] [--write]`
 *
 * Runs every benchmark under bench/ as its own process (each prints one JSON object last),
 * prints a table of figure, measured value, target from the issues, met or not, and the command
 * that reproduces it, then rewrites the generated summary at the top of docs/benchmarks.md
 * between `<!-- bench:begin -->` and `<!-- bench:end -->`; the rest of the file is left as is.
 *
 *   --quick  short durations and fewer rounds (a few minutes in all); the summary says so
 *   --only   just these benchmarks (names below); the doc is then left alone unless --write
 *
 * Names: heartbeat, heartbeat-100k, sms, sms-api-only, sms-processing, webhooks, webhooks-drain, webhooks-devices, history, connections, broadcast-one, broadcast-redis, actors,
 * two-instances, next, events-wait, events-ingest, outbound. Needs PostgreSQL at BENCH_DATABASE_URL's server (default 127.0.0.1:5432) and
 * Redis at REDIS_URL (default 127.0.0.1:6379); every script makes and drops its own database
 * (history keeps its reusable 1M-message data set in `simhost_bench`) and uses its own Redis prefix.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { machineSeconds } from "./devices-load";

const ROOT = join(import.meta.dir, "..");
const DOC = join(ROOT, "docs/benchmarks.md");
const BEGIN = "<!-- bench:begin -->";
const END = "<!-- bench:end -->";

const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const onlyAt = argv.indexOf("--only");
const only = onlyAt >= 0 ? new Set((argv[onlyAt + 1] ?? "").split(",").filter(Boolean)) : null;
const write = only === null || argv.includes("--write");

type Json = any;
/**
 * One line of the table; `met` null when the issue sets no target for the figure. `baseline`: the
 * same-run baseline the figure is judged against (bare Elysia route, pgbench-shaped insert, bare Bun
 * publish, bare sign-and-POST), absent while the script measures none: a script gains one by printing
 * it in its JSON (`baseline` beside its own figures) and its row here reading it.
 */
type Row = { figure: string; measured: string; baseline?: string; target: string; met: boolean | null; command: string };
/**
 * A row as run: the load average (1 min) before and after its benchmark and the share of the
 * machine's CPU in use just before it, and whether the machine was too busy to judge.
 */
type RunRow = Row & { load: string; busy: boolean };

/**
 * Above this share of the machine's CPU in use in the seconds before a benchmark starts (when
 * nothing of the bench runs), no target is called met: other work would have taken the cores
 * the figure needs. Measured rather than read from the 1-minute load average, which still
 * carries the previous benchmark's own load for a minute or two after it ended (back to back,
 * every benchmark of a run started at a load of 2-3 on 2 cores, busy or not).
 */
const BUSY_CPU_SHARE = 0.25;
/** Without /proc/stat (not Linux): the 1-minute load average per core above which the machine is busy. */
const BUSY_LOAD_PER_CORE = 1.5;
const CORES = navigator.hardwareConcurrency || 1;
/** What ran the bench: figures from different machines (CPU, Bun) are not comparable, so the summary names them. */
const MACHINE = `${CORES} cores (${cpus()[0]?.model.trim() || "CPU model unknown"}), Bun ${Bun.version}`;
/** The allocator setting every bench process runs with, as server/runtime.sh sets it (asked of it, not repeated here). */
const ALLOCATOR = Bun.spawnSync(["sh", "server/runtime.sh", "-e", "console.log(process.env.MIMALLOC_PURGE_DELAY)"], {
  cwd: ROOT,
  env: { ...process.env, BUN: process.execPath },
})
  .stdout.toString()
  .trim();
const SETTLE_MS = 3_000;

/** The share of all cores' time spent busy (anything but idle and iowait) over `ms`; null without /proc/stat. */
async function cpuInUse(ms: number): Promise<number | null> {
  try {
    const a = await machineSeconds();
    await Bun.sleep(ms);
    const b = await machineSeconds();
    return b.all > a.all ? (b.busy - a.busy) / (b.all - a.all) : null;
  } catch {
    return null;
  }
}
type Bench = {
  name: string;
  script: string;
  args: string[];
  /** Seconds before the run is killed: a stuck benchmark must not hold the rest. */
  timeout: number;
  rows: (out: Json, command: string) => Row[];
};

const n = (v: number) => Math.round(v).toLocaleString("en-US");
// Tenths only where they mean something: a backlog's seconds read better without them.
const ms = (v: number) => (v >= 100 ? `${n(v)} ms` : `${(+v).toFixed(1)} ms`);
/** A webhook bench's same-run baseline: a bare Bun process signing and POSTing to the same receiver. */
const bareSignAndPost = (o: Json) =>
  `bare sign-and-POST ${n(o.baseline_bare_sign_and_post.per_second)}/s (${n(o.baseline_bare_sign_and_post.body_bytes)}-byte bodies)`;
/** A broadcast bench's same-run baseline: a bare Bun server's `publish` to as many sockets. */
const barePublish = (o: Json) => `bare Bun publish p99 ${ms(o.baseline_bare_publish.p99_ms)} (p50 ${ms(o.baseline_bare_publish.p50_ms)})`;
const accepted = (r: Json) => (r.statuses?.[202] ?? 0) as number;
/** A closed loop's machine CPU per request by process (bench/devices-load.ts `LoadResult.machine`), or "" where it was not measured. */
const cpuSplit = (r: Json) =>
  r.machine
    ? `; CPU per request: server ${r.cpuUsPerRequest} µs, PostgreSQL ${r.machine.postgresUsPerRequest} µs, load processes and kernel ${r.machine.restUsPerRequest} µs (machine ${r.machine.busyPercent}% busy)`
    : "";

/** bench/devices-sms.ts: acknowledged per second (closed loop), and the fixed-rate run, each with its same-run baselines. */
function smsFigures(o: Json) {
  const fixed = o.http.fixedRate;
  const perSecond = accepted(o.http.max) / o.http.max.seconds;
  const bare = o.baseline.bareValidatedRoute;
  const barePerSecond = accepted(bare.max) / bare.max.seconds;
  return {
    fixed,
    perSecond,
    // Every request sent at the fixed rate must have been acknowledged, not just answered.
    allAccepted: accepted(fixed) === fixed.requests && fixed.errors === 0,
    bareClosed: `bare Elysia route validating the same body ${n(barePerSecond)}/s (ratio ${(perSecond / barePerSecond).toFixed(2)})`,
    bareFixed: `bare route at the same rate: p99 ${ms(bare.fixedRate.p99)}`,
    pgbench: o.pgbench
      ? `pgbench 100-row insert of device_sms ${n(o.pgbench.deviceSmsMean)} rows/s (ratio ${(o.intakeWithoutHttp.perSecond / o.pgbench.deviceSmsMean).toFixed(2)})`
      : undefined,
  };
}

const benches: Bench[] = [
  {
    name: "heartbeat",
    script: "bench/devices-heartbeat.ts",
    args: ["--seconds", quick ? "3" : "10"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => [
      {
        figure: "heartbeats vs bare Elysia route validating the same body (same run)",
        measured: `ratio ${o.ratio} (${n(o.heartbeat.rps)} req/s; p99 ${ms(o.heartbeat.p99)})`,
        baseline: `${n(o.baseline.rps)} req/s`,
        target: "≥ 0.7",
        met: o.ratio >= 0.7,
        command,
      },
      {
        figure: "server CPU per heartbeat, 64 connections (less the server's idle CPU; includes the writer)",
        measured: `${o.heartbeat.cpuUsPerRequestNet} µs (${o.heartbeat.cpuUsPerRequest} µs with idle work; baseline/heartbeat ${o.cpuRatio})`,
        baseline: `${o.baseline.cpuUsPerRequestNet} µs`,
        target: "≤ 40 µs",
        met: o.heartbeat.cpuUsPerRequestNet <= 40,
        command,
      },
      {
        figure: "global hooks: server CPU of the app's most trivial route less the same route in bare Elysia",
        measured: `${o.trivialRoute.hooksUs} µs (app ${o.trivialRoute.app.cpuUsPerRequestNet} µs, ${n(o.trivialRoute.app.rps)} req/s)`,
        baseline: `${o.trivialRoute.bare.cpuUsPerRequestNet} µs, ${n(o.trivialRoute.bare.rps)} req/s`,
        target: "≤ 5 µs",
        met: o.trivialRoute.hooksUs !== null && o.trivialRoute.hooksUs <= 5,
        command,
      },
    ],
  },
  {
    name: "heartbeat-100k",
    script: "bench/devices-heartbeat.ts",
    args: ["--seconds", quick ? "3" : "10", "--devices", quick ? "20000" : "100000"],
    timeout: quick ? 300 : 900,
    rows: (o, command) => [
      {
        figure: `heartbeats from ${n(o.devices)} distinct devices (every heartbeat its own row in the writer) vs the bare validated Elysia route`,
        measured: `ratio ${o.ratio} (${n(o.heartbeat.rps)} req/s; p99 ${ms(o.heartbeat.p99)}; ${o.heartbeat.cpuUsPerRequestNet} µs server CPU per heartbeat)`,
        baseline: `${n(o.baseline.rps)} req/s`,
        target: "≥ 0.5",
        met: o.ratio >= 0.5 && o.devicesOnline === o.devices,
        command,
      },
    ],
  },
  {
    name: "sms",
    script: "bench/devices-sms.ts",
    args: ["--seconds", quick ? "3" : "10", "--rate", "5000"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => {
      const { fixed, perSecond, allAccepted, bareClosed, bareFixed, pgbench } = smsFigures(o);
      return [
        {
          figure: "durable SMS ingest over HTTP (closed loop), processing on the same cores",
          measured: `${n(perSecond)}/s acknowledged`,
          baseline: bareClosed,
          target: "≥ 10,000/s",
          met: perSecond >= 10_000,
          command,
        },
        {
          // Started once the closed loop's backlog is processed; processing keeps pace when what
          // is left unprocessed at its end is at most a second of the rate.
          figure: "SMS p99 at a fixed 5,000/s (open loop), processing keeping pace on the same cores",
          measured: `p99 ${ms(fixed.p99)}, ${n(accepted(fixed))} of ${n(fixed.requests)} accepted, ${n(fixed.requests / fixed.seconds)}/s served; unprocessed at its end ${n(o.processing.afterFixedRate.backlog)} (processed within ${ms(o.processing.afterFixedRate.drainMs)}); closed loop's backlog ${n(o.processing.afterClosedLoop.backlog)} processed in ${ms(o.processing.afterClosedLoop.drainMs)} before it`,
          baseline: bareFixed,
          target: "< 50 ms; ≤ 1 s of the rate unprocessed at its end",
          met: fixed.p99 < 50 && allAccepted && o.processing.afterFixedRate.backlog <= fixed.rate,
          command,
        },
        {
          figure: "durable SMS intake alone (group commit, no HTTP)",
          measured: `${n(o.intakeWithoutHttp.perSecond)}/s`,
          baseline: pgbench,
          target: "≥ 10,000/s",
          met: o.intakeWithoutHttp.perSecond >= 10_000,
          command,
        },
      ];
    },
  },
  {
    // The same, with the server storing only (WORKERS=0): an API instance whose SMS are processed
    // by other instances. On one 2-core machine the processing otherwise competes for the cores.
    name: "sms-api-only",
    script: "bench/devices-sms.ts",
    args: ["--seconds", quick ? "3" : "10", "--rate", "5000", "--workers", "0"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => {
      const { fixed, perSecond, allAccepted, bareClosed, bareFixed } = smsFigures(o);
      return [
        {
          figure: "durable SMS ingest over HTTP, API-only instance (WORKERS=0)",
          baseline: `${bareClosed}${cpuSplit(o.baseline.bareValidatedRoute.max)}; ${bareFixed}`,
          measured: `${n(perSecond)}/s acknowledged${cpuSplit(o.http.max)}; p99 ${ms(fixed.p99)} at a fixed 5,000/s (${n(accepted(fixed))} of ${n(fixed.requests)} accepted)`,
          target: "≥ 20,000/s; p99 < 50 ms at 5,000/s",
          met: perSecond >= 20_000 && fixed.p99 < 50 && allAccepted,
          command,
        },
        {
          figure: "device_sms in a 100-row pgbench insert (4 clients) vs a minimal row of the same columns, alternated (same run)",
          measured: o.pgbench ? `${n(o.pgbench.deviceSmsMean)} rows/s (ratio ${o.pgbench.ratio})` : "pgbench not found",
          baseline: o.pgbench ? `minimal row ${o.pgbench.minimalRowsPerSecond.map(n).join(" / ")} rows/s` : undefined,
          target: "≥ 80,000 rows/s",
          met: o.pgbench ? o.pgbench.deviceSmsMean >= 80_000 : null,
          command,
        },
      ];
    },
  },
  {
    // What processing costs per SMS without HTTP or intake beside it: the share of the 2 cores
    // the fixed-rate row's processing needs (5,000/s at 130 µs is about a third of them).
    name: "sms-processing",
    script: "bench/sms-processing.ts",
    args: ["--sms", quick ? "5000" : "20000", "--rounds", quick ? "1" : "3"],
    timeout: quick ? 120 : 300,
    rows: (o, command) => {
      type Round = {
        wallUsPerSms: number;
        serverCpuUsPerSms: number;
        postgresCpuUsPerSms: number;
        baseline: { wallUsPerRow: number; postgresCpuUsPerRow: number };
      };
      const rounds = o.rounds as Round[];
      const range = (value: (r: Round) => number) => {
        const xs = rounds.map(value);
        return `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;
      };
      const best = Math.min(...rounds.map((r) => r.wallUsPerSms));
      return [
        {
          figure: `device SMS processed into messages alone (one process, one connection, ${n(o.chunk)} per transaction), per SMS`,
          measured: `${range((r) => r.wallUsPerSms)} µs (${n(1e6 / best)}/s at best); processor CPU ${range((r) => r.serverCpuUsPerSms)} µs, PostgreSQL backend ${range((r) => r.postgresCpuUsPerSms)} µs; ${rounds.length} round${rounds.length === 1 ? "" : "s"} of ${n(o.sms)}; ratio to the baseline's wall time ${range((r) => r.wallUsPerSms / r.baseline.wallUsPerRow)}`,
          baseline: `the same SMS read by id and written as one minimal row each, ${n(o.chunk)} per transaction: ${range((r) => r.baseline.wallUsPerRow)} µs a row (PostgreSQL backend ${range((r) => r.baseline.postgresCpuUsPerRow)} µs)`,
          target: "reported (the processing beside the fixed-rate SMS row)",
          met: null,
          command,
        },
      ];
    },
  },
  {
    name: "webhooks",
    script: "bench/webhooks-e2e.ts",
    args: ["--rate", "1000", "--seconds", quick ? "5" : "60"],
    timeout: quick ? 300 : 900,
    rows: (o, command) => [
      {
        figure: `inbound SMS → webhook, 1,000 msg/s for ${o.seconds} s`,
        measured: `p50 ${ms(o.latency_ms.p50)}, p99 ${ms(o.latency_ms.p99)} (stored at ${n(o.send_rate_achieved)}/s)`,
        baseline: bareSignAndPost(o),
        target: "p99 < 250 ms at 1,000/s",
        met: o.latency_ms.p99 < 250 && o.send_rate_achieved >= 0.95 * o.rate_target,
        command,
      },
      {
        figure: "webhooks lost / delivered twice",
        measured: `${n(o.missing_after_60s_grace)} lost, ${n(o.duplicates)} twice, ${n(o.unverified)} unverified of ${n(o.stored)}`,
        target: "0 lost, 0 twice",
        met: o.missing_after_60s_grace === 0 && o.duplicates === 0 && o.unverified === 0 && o.store_errors === 0,
        command,
      },
    ],
  },
  {
    name: "webhooks-drain",
    script: "bench/webhooks-e2e.ts",
    args: ["--drain", quick ? "5000" : "20000"],
    timeout: quick ? 300 : 600,
    rows: (o, command) => {
      const ratio = o.deliveries_per_second / o.baseline_bare_sign_and_post.per_second;
      return [
        {
          figure: "one endpoint drains message.received deliveries (log consumer, lanes, signing, POST, records), receiver in its own process",
          measured: `${n(o.deliveries_per_second)}/s, ratio ${ratio.toFixed(2)} to bare (${n(o.drained)} delivered, ${n(o.duplicates)} twice; ${o.cpu_us_per_delivery} µs CPU per delivery)`,
          baseline: bareSignAndPost(o),
          target: "≥ 3,000/s and ≥ 1/3 of the bare sign-and-POST ceiling",
          met: o.deliveries_per_second >= 3000 && ratio >= 1 / 3 && o.duplicates === 0,
          command,
        },
      ];
    },
  },
  {
    name: "webhooks-devices",
    script: "bench/webhooks-devices-e2e.ts",
    args: ["--rate", "1000", "--seconds", quick ? "5" : "60"],
    timeout: quick ? 300 : 900,
    rows: (o, command) => [
      {
        figure: `SMS submitted by devices over HTTP → webhook, 1,000/s for ${o.seconds} s`,
        measured: `p50 ${ms(o.latency_ms.p50)}, p99 ${ms(o.latency_ms.p99)}; ${n(o.accepted)} of ${n(o.submitted)} accepted (submit p99 ${ms(o.submit_p99_ms)}), ${n(o.missing_after_60s_grace)} lost, ${n(o.duplicates)} twice`,
        baseline: bareSignAndPost(o),
        target: "p99 < 250 ms at 1,000/s, 0 lost, 0 twice",
        met:
          o.latency_ms.p99 < 250 &&
          o.submit_rate_achieved >= 0.95 * o.rate_target &&
          o.accepted === o.submitted &&
          o.missing_after_60s_grace === 0 &&
          o.duplicates === 0 &&
          o.unverified === 0,
        command,
      },
    ],
  },
  {
    name: "history",
    script: "bench/messages-history.ts",
    args: ["--messages", "1000000", "--runs", quick ? "100" : "1000"],
    // The 1M-message data set is built on the first run only (several minutes).
    timeout: 1800,
    rows: (o, command) =>
      [1, 1000].map((page) => {
        const r = o.results.find((x: Json) => new RegExp(`^hosted_sim=\\d+&per_page=50&page=${page}$`).test(x.query));
        // Same run, interleaved the same way: the page's store call alone, and its SQL inside PostgreSQL.
        const store = o.results.find((x: Json) => x.query === `store only: page=${page}`);
        const database = o.results.find((x: Json) => x.query === `database only: page=${page}`);
        return {
          figure: `message history over HTTP, page ${n(page)} of 50, ${n(o.messages)} messages`,
          measured: `p99 ${ms(r.p99)} (p50 ${ms(r.p50)}, ${r.runs} runs)`,
          baseline: `the store alone p99 ${ms(store.p99)}; its SQL in PostgreSQL p99 ${ms(database.p99)}`,
          target: "p99 < 20 ms",
          met: r.p99 < 20,
          command,
        };
      }),
  },
  {
    name: "connections",
    script: "bench/realtime-connections.ts",
    args: ["10000"],
    timeout: quick ? 300 : 600,
    rows: (o, command) => [
      {
        figure: "WebSocket connections held, private channels, one instance",
        measured: `${n(o.server_connections_gauge)} held; ${n(o.server_bytes_per_connection)} bytes/connection (RSS ${o.server_rss_before_mib} → ${o.server_rss_after_mib} MiB; no GC forced, each connection's auth request included)`,
        baseline: `bare Bun, topic per socket: ${n(o.baseline_bare_bun.bytes_per_connection)} bytes/connection`,
        target: "10,000, memory reported",
        met: o.server_connections_gauge >= 10_000,
        command,
      },
    ],
  },
  {
    name: "broadcast-one",
    script: "bench/realtime-broadcast.ts",
    args: ["one", "1000", quick ? "50" : "200"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => [
      {
        figure: "broadcast to 1,000 subscribers, one instance",
        measured: `p99 ${ms(o.p99_ms)} (p50 ${ms(o.p50_ms)}, ${o.rounds} rounds); ratio to bare ${o.ratio_p99}`,
        baseline: barePublish(o),
        target: "p99 < 100 ms",
        met: o.p99_ms < 100,
        command,
      },
    ],
  },
  {
    name: "broadcast-redis",
    script: "bench/realtime-broadcast.ts",
    args: ["redis", "1000", quick ? "50" : "200"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => [
      {
        figure: "broadcast to 1,000 subscribers, two instances (appended to the log on A, read by B woken over Redis)",
        measured: `p99 ${ms(o.p99_ms)} (p50 ${ms(o.p50_ms)}, ${o.rounds} rounds); ratio to bare ${o.ratio_p99}`,
        baseline: barePublish(o),
        target: "p99 < 150 ms",
        met: o.p99_ms < 150,
        command,
      },
    ],
  },
  {
    name: "actors",
    script: "bench/devices-actors.ts",
    args: ["--devices", "100000"],
    timeout: 240,
    rows: (o, command) => [
      {
        figure: "idle device actors (100,000 online devices)",
        measured: `${n(o.bytesPerActor)} bytes/actor ≈ ${n(2 ** 30 / o.bytesPerActor)} actors/GiB`,
        target: "< 1 KiB/actor (> 1,048,576/GiB)",
        met: o.bytesPerActor < 1024,
        command,
      },
    ],
  },
  {
    name: "next",
    script: "bench/messages-next.ts",
    args: ["--runs", quick ? "200" : "1000", "--waiters", "1000"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => [
      {
        figure: `SMS (provider callback) → waiting messages/next answered, one instance, ${n(o.runs)} runs`,
        measured: `p99 ${ms(o.oneInstance.p99_ms)} (p50 ${ms(o.oneInstance.p50_ms)}), ${o.oneInstance.wrong_or_missing} wrong or missing`,
        baseline: `bare Bun, a held GET released by a POST: p99 ${ms(o.baseline.oneInstance.p99_ms)} (p50 ${ms(o.baseline.oneInstance.p50_ms)})`,
        target: "p99 < 50 ms",
        met: o.oneInstance.p99_ms < 50 && o.oneInstance.wrong_or_missing === 0,
        command,
      },
      {
        figure: "the same, waiter on instance A, SMS into instance B (Redis)",
        measured: `p99 ${ms(o.twoInstances.p99_ms)} (p50 ${ms(o.twoInstances.p50_ms)}), ${o.twoInstances.wrong_or_missing} wrong or missing`,
        baseline: `bare Bun, held on A, released by a POST to B over Redis: p99 ${ms(o.baseline.twoInstances.p99_ms)} (p50 ${ms(o.baseline.twoInstances.p50_ms)})`,
        target: "p99 < 100 ms",
        met: o.twoInstances.p99_ms < 100 && o.twoInstances.wrong_or_missing === 0,
        command,
      },
      {
        figure: `${n(o.concurrent.waiters)} concurrent waiters on as many numbers, one message each`,
        measured: `${n(o.concurrent.answered)} answered, ${o.concurrent.answered_twice} twice, ${o.concurrent.wrong_message} wrong; ${n(o.concurrent.bytes_per_waiter)} bytes/waiter (RSS ${o.concurrent.rss_before_mib} → ${o.concurrent.rss_waiting_mib} MiB)`,
        target: "all answered, none twice, memory reported",
        met:
          o.concurrent.answered === o.concurrent.waiters && o.concurrent.answered_twice === 0 && o.concurrent.wrong_message === 0 && o.concurrent.failed === 0,
        command,
      },
    ],
  },
  {
    name: "events-wait",
    script: "bench/events-waiters.ts",
    args: ["--waiters", "1000", "--rounds", quick ? "2" : "5"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => [
      {
        figure: `${n(o.waiters)} concurrent GET /api/events?wait= on one instance, one event appended, ${o.rounds} rounds`,
        measured: `wake-up p99 ${ms(o.simhost.p99_ms)} (p50 ${ms(o.simhost.p50_ms)}), ${o.simhost.wrong_or_missing} wrong; ${n(o.simhost.bytes_per_waiter)} bytes/waiter`,
        baseline: `bare Bun releasing as many held requests: p99 ${ms(o.baseline.p99_ms)}`,
        target: "p99 < 50 ms; memory reported",
        met: o.simhost.p99_ms < 50 && o.simhost.wrong_or_missing === 0,
        command,
      },
    ],
  },
  {
    name: "events-ingest",
    script: "bench/events-ingest.ts",
    args: ["--seconds", quick ? "3" : "10"],
    timeout: quick ? 300 : 600,
    rows: (o, command) => [
      {
        figure: "events appended per second on the SMS ingest path (closed loop over HTTP, workers on the same cores)",
        measured: `${n(o.with_events.events_appended_during_loop_per_second)} message.received/s during the loop (${n(o.with_events.acknowledged_per_second)} SMS/s acknowledged; caught up ${o.with_events.caught_up ? `${o.with_events.caught_up_after_loop_seconds} s after it` : "not within the drain"}); ratio to the ingest without events ${o.ratio_events_to_ingest_without_events}`,
        baseline: `ingest without events (API-only server) ${n(o.baseline.acknowledged_per_second)} SMS/s`,
        target: "reported beside the ingest figure without events",
        met: null,
        command,
      },
    ],
  },
  {
    name: "outbound",
    script: "bench/outbound-dispatch.ts",
    args: quick ? ["--seconds", "3", "--scheduled", "2000", "--hold", "20000"] : ["--seconds", "10", "--scheduled", "10000", "--hold", "100000"],
    timeout: quick ? 300 : 900,
    rows: (o, command) => [
      {
        figure: "accepted sends, one instance (single; bulk of 1,000)",
        measured: `single ${n(o.single.accepted_per_s)}/s (p99 ${ms(o.single.p99)}), bulk ${n(o.bulk.recipients_per_s)} recipients/s (p99 ${ms(o.bulk.p99)})`,
        baseline: `GET /api/me with the same token, 16 at once: ${n(o.baseline.rps)}/s (p99 ${ms(o.baseline.p99)})`,
        target: "reported",
        met: null,
        command,
      },
      {
        figure: `send_at → hand-over to the phone (message.send), ${n(o.dispatch.scheduled)} sends at 1,000 scheduled/s`,
        measured: `p99 ${ms(o.dispatch.p99_ms)} (p50 ${ms(o.dispatch.p50_ms)}), ${n(o.dispatch.dispatched)} handed over`,
        target: "p99 < 1 s",
        met: o.dispatch.p99_ms < 1000 && o.dispatch.dispatched === o.dispatch.scheduled,
        command,
      },
      {
        figure: `${n(o.hold.held)} scheduled sends held`,
        measured: `server RSS ${o.hold.rss_before_mib} → ${o.hold.rss_after_mib} MiB; messages ${o.hold.messages_table_mib} MiB, jobs ${o.hold.jobs_table_mib} MiB on disk`,
        target: "100,000, memory reported",
        met: o.hold.held >= 100_000,
        command,
      },
    ],
  },
  {
    name: "db-pool",
    script: "bench/db-pool.ts",
    args: quick ? ["--queries", "100000", "--slice", "25000"] : ["--queries", "400000", "--slice", "50000"],
    timeout: quick ? 120 : 300,
    rows: (o, command) => [
      {
        figure: `the server's database pool (${o.max} connections, ${o.concurrency} queries at a time) after ${n(o.queries)} queries: a query of the last ${n(o.slice)} against one of the first (same run)`,
        measured: `${o.usPerQueryBySlice.at(-1)} µs a query (ratio ${o.lastToFirst}; by ${n(o.slice)}: ${o.usPerQueryBySlice.join(", ")})`,
        baseline: `the first ${n(o.slice)}: ${o.usPerQueryBySlice[0]} µs a query`,
        target: "ratio ≤ 1.25 (a query costs what it did however many ran before it)",
        met: o.lastToFirst !== null && o.lastToFirst <= 1.25,
        command,
      },
    ],
  },
  {
    name: "code-extraction",
    script: "bench/code-extraction.ts",
    args: ["--rounds", "3", "--repeat", quick ? "5" : "20"],
    timeout: 120,
    rows: (o, command) => [
      {
        figure: "one-time code extraction (every stored message): the slowest 1,600-character body against an ordinary SMS (same run)",
        measured: `${o.worst.us} µs (${o.worst.kind}; ${o.worstToOrdinary}× an ordinary SMS)`,
        baseline: `${n(o.ordinaryTexts)} labelled SMS: ${o.ordinaryUs} µs a text`,
        target: "reported (linear in the text: a long body costs its length, not its length squared)",
        met: null,
        command,
      },
    ],
  },
  {
    name: "two-instances",
    script: "bench/two-instances.ts",
    args: ["--seconds", quick ? "3" : "10"],
    timeout: quick ? 240 : 600,
    rows: (o, command) => [
      {
        figure: "heartbeats, two instances round-robin vs one (same machine)",
        measured: `ratio ${o.ratio} (${n(o.twoInstances.rps)} req/s)`,
        baseline: `one instance ${n(o.oneInstance.rps)} req/s`,
        target: "reported (no target)",
        met: null,
        command,
      },
    ],
  },
];

/** The last JSON object of a script's output: a single line, or pretty-printed from a `{` line on. */
function lastJson(stdout: string): Json {
  const lines = stdout.trimEnd().split("\n");
  // A result printed with indentation opens and closes on lines of its own; a log line printed
  // after it (the server's JSON logs share stdout) must not be taken for it, nor glued to it.
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i] !== "{") continue;
    const end = lines.indexOf("}", i);
    try {
      if (end > i) return JSON.parse(lines.slice(i, end + 1).join("\n"));
    } catch {}
  }
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i]!.startsWith("{")) continue;
    try {
      return JSON.parse(lines[i]!);
    } catch {}
  }
  throw new Error("no JSON result in the output");
}

/**
 * Runs one script in its own session (setsid) so that on a timeout the whole process group,
 * servers it spawned included, is ended, not just the script. It runs through server/runtime.sh,
 * as its servers do: what it measures in its own process (the intake or the processing alone)
 * runs on the server's runtime settings.
 */
async function runOne(b: Bench): Promise<{ out?: Json; error?: string; seconds: number }> {
  const started = performance.now();
  const proc = Bun.spawn(["setsid", "sh", "server/runtime.sh", b.script, ...b.args], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, BUN: process.execPath },
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {}
  }, b.timeout * 1000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  const seconds = (performance.now() - started) / 1000;
  if (timedOut) return { error: `timed out after ${b.timeout} s`, seconds };
  try {
    return { out: lastJson(stdout), seconds, ...(code !== 0 ? { error: `exit ${code}` } : {}) };
  } catch {
    const why = stderr.trim().split("\n").slice(-3).join(" ").slice(0, 200);
    return { error: `exit ${code}${why ? `: ${why}` : ""}`, seconds };
  }
}

function rowsOf(b: Bench, result: { out?: Json; error?: string }, command: string): Row[] {
  if (result.out) {
    try {
      return b.rows(result.out, command);
    } catch (e) {
      return [{ figure: b.name, measured: `unreadable result: ${(e as Error).message}`, target: "", met: null, command }];
    }
  }
  return [{ figure: b.name, measured: `failed (${result.error})`, target: "", met: null, command }];
}

const mark = (r: RunRow) => {
  if (r.met === null) return "—";
  if (!r.met) return "not met";
  return r.busy ? "not judged (machine busy at start)" : "met";
};
const NO_BASELINE = "none in this run";
const load = () =>
  loadavg()
    .map((v) => v.toFixed(2))
    .join(", ");

function printTable(rows: RunRow[]) {
  const cells = [
    ["figure", quick ? "measured (quick run)" : "measured", "same-run baseline", "target", "met", "load (1 min) before → after", "command"],
    ...rows.map((r) => [r.figure, r.measured, r.baseline ?? NO_BASELINE, r.target, mark(r), r.load, r.command]),
  ];
  const widths = cells[0]!.map((_, c) => Math.max(...cells.map((row) => row[c]!.length)));
  for (const [i, row] of cells.entries()) {
    console.log(row.map((v, c) => v.padEnd(widths[c]!)).join("  "));
    if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "));
  }
}

const cell = (v: string) => v.replaceAll("|", "\\|");

function summary(rows: RunRow[], context: { started: Date; loadBefore: string; loadAfter: string; minutes: number }) {
  const command = `bun run bench${quick ? " --quick" : ""}`;
  return [
    BEGIN,
    "## Summary (generated by `bun run bench`; edit the script, not this section)",
    "",
    `Last run: \`${command}\` on ${context.started.toISOString().slice(0, 16).replace("T", " ")} UTC, ${context.minutes.toFixed(1)} min; ` +
      `load average (1, 5, 15 min) ${context.loadBefore} at the start, ${context.loadAfter} at the end.` +
      (quick ? " **Quick run**: short durations and fewer rounds, so these figures are indicative only; run without `--quick` for the real ones." : ""),
    `The machine: ${MACHINE}, shared by the load generator, the server and PostgreSQL; figures move by 10-40% between runs on one machine and more between machines, so each is judged against a baseline measured in the same run. The sections below hold the analysed runs.`,
    `Every script, server and baseline ran through server/runtime.sh, as \`npm start\` runs the server: MIMALLOC_PURGE_DELAY=${ALLOCATOR}.`,
    `One benchmark alone: \`bun run bench --only <name>\` (${benches.map((b) => b.name).join(", ")}), or the command in its row.`,
    "",
    `No target is called met when more than ${BUSY_CPU_SHARE * 100}% of the machine's CPU (${CORES} cores) was in use in the ${SETTLE_MS / 1000} s before its benchmark started, ` +
      'while nothing of the bench ran ("CPU in use" in the load column). The 1-minute load average is shown for information: it still carries the previous benchmark\'s own load for a minute or two.',
    "",
    `| figure | ${quick ? "measured (quick run)" : "measured"} | same-run baseline | target | met | load before → after | reproduce |`,
    "|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) => `| ${cell(r.figure)} | ${cell(r.measured)} | ${cell(r.baseline ?? NO_BASELINE)} | ${cell(r.target)} | ${mark(r)} | ${r.load} | \`${r.command}\` |`,
    ),
    END,
  ].join("\n");
}

/** Replaces the marked section, or puts it under the title when the markers are not there yet. */
function rewriteDoc(section: string) {
  const doc = readFileSync(DOC, "utf8");
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  let next: string;
  if (begin >= 0 && end > begin) next = doc.slice(0, begin) + section + doc.slice(end + END.length);
  else {
    const titleEnd = doc.startsWith("# ") ? doc.indexOf("\n") + 1 : 0;
    next = `${doc.slice(0, titleEnd)}\n${section}\n${doc.slice(titleEnd)}`;
  }
  writeFileSync(DOC, next);
}

const selected = benches.filter((b) => !only || only.has(b.name));
if (only && selected.length !== only.size) {
  console.error(`unknown benchmark in --only; names: ${benches.map((b) => b.name).join(", ")}`);
  process.exit(2);
}
const started = new Date();
const loadBefore = load();
console.error(`[bench] on ${MACHINE}`);
const rows: RunRow[] = [];
for (const b of selected) {
  const command = `bun ${b.script} ${b.args.join(" ")}`;
  const inUse = await cpuInUse(SETTLE_MS);
  const inUseText = inUse === null ? "unknown" : `${Math.round(inUse * 100)}%`;
  const before = loadavg()[0]!;
  console.error(`[bench] ${b.name}: ${command} (load average ${load()}; CPU in use ${inUseText})`);
  const result = await runOne(b);
  const after = loadavg()[0]!;
  console.error(`[bench] ${b.name}: ${result.error ?? "done"} in ${result.seconds.toFixed(0)} s`);
  const busy = inUse === null ? before / CORES > BUSY_LOAD_PER_CORE : inUse > BUSY_CPU_SHARE;
  const cpu = inUse === null ? "" : ` (CPU in use ${inUseText} before)`;
  rows.push(...rowsOf(b, result, command).map((r) => ({ ...r, load: `${before.toFixed(2)} → ${after.toFixed(2)}${cpu}`, busy })));
}
const loadAfter = load();
console.log(quick ? "\nQuick run: short durations, figures indicative only.\n" : "");
printTable(rows);
console.log(`\n${MACHINE}; load average at start ${loadBefore}, at end ${loadAfter}`);
if (write) {
  rewriteDoc(summary(rows, { started, loadBefore, loadAfter, minutes: (Date.now() - started.getTime()) / 60000 }));
  console.log(`wrote the summary to ${DOC}`);
}
