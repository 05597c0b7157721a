/**
 * Shared pieces of the device benchmarks: a fresh PostgreSQL database, the real server or a
 * baseline server as child processes, tenants and devices written straight to the database, and
 * a closed-loop / open-loop HTTP load generator with latency percentiles.
 */
import { readdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { issueSession } from "../server/auth/tokens";
import type { SmsSubmission } from "../server/devices/sms-store";

export const ROOT = join(import.meta.dir, "..");
const BASE = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The 1, 5 and 15 minute load averages, to two decimals: printed beside a bench's figures. */
export const load = () => loadavg().map((v) => +v.toFixed(2));

export const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};

/** Each fresh database's autovacuum stand-in (`autovacuumMeanwhile`), stopped by `dropDatabase`. */
const analyzers = new Map<string, () => Promise<void>>();

/** The URL of database `name` on the bench's PostgreSQL server. */
const databaseUrl = (name: string) => {
  const u = new URL(BASE);
  u.pathname = `/${name}`;
  return u.toString();
};

/**
 * A new database for one run (dropped by `dropDatabase`), a copy of the database at `o.template`
 * when given, vacuumed and analyzed meanwhile as autovacuum would (`autovacuumMeanwhile`) unless
 * `o.autovacuum` is false (a template, which must be left alone to be copied, or a database
 * whose measurement the stand-in's work would disturb).
 */
export async function freshBenchDatabase(tag: string, o: { template?: string; autovacuum?: boolean } = {}) {
  const admin = postgres(BASE, { max: 1, onnotice: () => {} });
  const name = `simhost_bench_${tag}_${Date.now()}`;
  const template = o.template ? ` template "${new URL(o.template).pathname.slice(1)}"` : "";
  await admin.unsafe(`create database "${name}"${template}`);
  await admin.end();
  const url = databaseUrl(name);
  if (o.autovacuum !== false) analyzers.set(url, autovacuumMeanwhile(url));
  return url;
}

export async function dropDatabase(url: string) {
  await analyzers.get(url)?.();
  analyzers.delete(url);
  const admin = postgres(BASE, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${new URL(url).pathname.slice(1)}" with (force)`).catch(() => {});
  await admin.end();
}

export async function freePort() {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/**
 * Starts `script` (the server, or a bare baseline) as `npm start` starts the server, through
 * server/runtime.sh (Bun's options and the allocator's settings: every server of a run on the same
 * runtime), and waits until `readyPath` answers. The allocator's setting can be changed for a
 * whole run (`MIMALLOC_PURGE_DELAY=10 bun run bench`: mimalloc's default) or by `env`. With
 * BENCH_CPU_PROF=<dir> the server (or a bare baseline) writes a CPU profile (.cpuprofile and
 * markdown) there when it exits (stop it with SIGTERM; the baselines exit on it for that).
 */
export async function spawnServer(script: string, env: Record<string, string>, readyPath: string) {
  const port = await freePort();
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // runtime.sh ends in `exec`: the child's pid is the server's own (its CPU time is read from /proc).
  const proc = Bun.spawn(["sh", "server/runtime.sh", ...profile, script], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      ...(process.env.MIMALLOC_PURGE_DELAY ? { MIMALLOC_PURGE_DELAY: process.env.MIMALLOC_PURGE_DELAY } : {}),
      BUN: process.execPath,
      LOG_LEVEL: "error",
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      ...env,
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url + readyPath)).status < 500) return { proc, url };
    } catch {}
    await Bun.sleep(50);
  }
  throw new Error(`${script} did not start`);
}

/**
 * Vacuums and analyzes what autovacuum would by its default thresholds: a vacuum for a table with
 * more than 50 dead rows + 20% of its rows, or more than 1,000 rows inserted + 20% since its last
 * vacuum; an analyze for a table changed by more than 50 rows + 10% since its last analyze.
 */
export async function autovacuumOnce(sql: postgres.Sql): Promise<void> {
  const due = await sql<{ name: string; vacuum: boolean; analyze: boolean }[]>`
    select format('%I.%I', s.schemaname, s.relname) as name,
           s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0) or s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0) as vacuum,
           s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0) as analyze
    from pg_stat_user_tables s join pg_class c on c.oid = s.relid`;
  for (const t of due) {
    if (t.vacuum) await sql.unsafe(`vacuum ${t.analyze ? "(analyze) " : ""}${t.name}`);
    else if (t.analyze) await sql.unsafe(`analyze ${t.name}`);
  }
}

/**
 * Autovacuum, which every production server runs and this machine switches off (`autovacuum = off`
 * in /etc/postgresql/15/main/conf.d/90-ci.conf): every `everyMs`, the tables past autovacuum's
 * default thresholds are vacuumed and analyzed (`autovacuumOnce`). Without it a table filled
 * during a run keeps the estimates of its empty start, and so do the generic plans PostgreSQL
 * caches for a prepared statement after five executions (postgres.js prepares every statement):
 * sequential scans planned for an empty table run on a growing one, which no server with
 * autovacuum on would keep, and a queue's dead rows pile up (docs/benchmarks.md, "Plans cached for
 * empty tables"). Checked every 5 s rather than autovacuum's 1-minute naptime, so that a run of a
 * minute measures the steady state rather than a fresh database's first minute.
 * BENCH_NO_ANALYZE=1 leaves it out. Returns its stop, which waits for the work under way.
 */
export function autovacuumMeanwhile(url: string, everyMs = 5000): () => Promise<void> {
  if (process.env.BENCH_NO_ANALYZE) return async () => {};
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = Promise.resolve();
  let stopped = false;
  const tick = () => {
    running = autovacuumOnce(sql).catch(() => {});
    void running.then(() => {
      if (!stopped) timer = setTimeout(tick, everyMs);
    });
  };
  timer = setTimeout(tick, everyMs);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
    await sql.end();
  };
}

export type Sql = postgres.Sql;

export function connect(url: string) {
  return postgres(url, { max: 4, onnotice: () => {}, types: { int8: { to: 20, from: [20], serialize: String, parse: Number } } as never });
}

/** An enterprise organization with an owner, a session token and `n` active devices. */
export async function seedDevices(sql: Sql, n: number) {
  const [org] = await sql<{ id: number }[]>`insert into organizations (name, plan) values ('bench', 'enterprise') returning id`;
  const hash = await Bun.password.hash("bench-password-123", { algorithm: "argon2id" });
  const [user] = await sql<{ id: number }[]>`
    insert into users (name, email, password_hash) values ('bench', ${`bench-${Date.now()}@example.test`}, ${hash}) returning id`;
  await sql`insert into memberships (user_id, organization_id, role) values (${user!.id}, ${org!.id}, 'owner')`;
  const token = (await issueSession(sql, user!.id, { ttlSeconds: 86400, epoch: 0 }))!.token; // a user just made: epoch 0
  const ids = await sql<{ id: number }[]>`
    insert into devices (organization_id, android_id, device_model, app_version, status)
    select ${org!.id}, lpad(to_hex(g), 16, '0'), 'bench', '1.0', 'active' from generate_series(1, ${n}) g returning id`;
  await sql`
    with h as (
      insert into hosted_sims (number, provider, type, shared_max_orgs)
      select '+1777' || lpad(d.id::text, 7, '0'), 'byos', 'virtual', 1 from unnest(${ids.map((r) => r.id)}::bigint[]) d(id) returning id, number),
    a as (insert into hosted_sim_organizations (hosted_sim_id, organization_id) select id, ${org!.id} from h)
    insert into sim_cards (device_id, sim_slot, phone_number, status, hosted_sim_id)
    select substring(h.number from 6)::bigint, 1, h.number, 'active', h.id from h`;
  // Statistics, as autovacuum gathers them within a minute of such a load on a running server.
  // BENCH_NO_ANALYZE=1 leaves them out: the first minute after a bulk import, when statements are
  // planned for tables of unknown size (docs/benchmarks.md, heartbeats of 100,000 devices).
  if (!process.env.BENCH_NO_ANALYZE) await sql`analyze devices, sim_cards, hosted_sims, hosted_sim_organizations`;
  return { orgId: org!.id, token, deviceIds: ids.map((r) => r.id) };
}

/**
 * SMS submitted straight to the intake (server/devices/sms-ingest.ts, no HTTP), from
 * `concurrency` loops at once, round-robin over `deviceIds`, for as long as `more(n)` holds (`n`:
 * submitted so far); `body(i)` is the i-th SMS's text. Returns how many were submitted.
 */
export async function submitToIntake(
  ingest: { submit(item: SmsSubmission): Promise<unknown> },
  deviceIds: number[],
  o: { concurrency: number; more: (n: number) => boolean; body: (i: number) => string },
) {
  let n = 0;
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (o.more(n)) {
        const i = n++;
        await ingest.submit({
          deviceId: deviceIds[i % deviceIds.length]!,
          messageId: crypto.randomUUID(),
          simSlot: 1,
          from: "+15550002222",
          body: o.body(i),
          receivedAt: new Date().toISOString(),
        });
      }
    }),
  );
  return n;
}

/** A device's SMS submission body, unique per call (`i` and a random id). */
const smsBody = (i: number) =>
  JSON.stringify({ from: "+15550001111", body: `bench message ${i} ${crypto.randomUUID()}`, message_id: crypto.randomUUID(), sim_slot: 1 });

/** The i-th SMS submission of a closed or open loop, spread over the seeded devices. */
export const smsRequest = (baseUrl: string, token: string, deviceIds: number[]) => (i: number) =>
  new Request(`${baseUrl}/api/byos/devices/${deviceIds[i % deviceIds.length]}/sms`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: smsBody(i),
  });

/**
 * Requests a load process builds for itself (bench/load-process.ts), named because a closure
 * cannot cross into another process: `{ maker: "sms", args }` stands for `smsRequest(...args)`.
 */
export const REQUEST_MAKERS = { sms: smsRequest };
export type RequestSpec = { maker: "sms"; args: Parameters<typeof smsRequest> };
export const smsLoad = (...args: Parameters<typeof smsRequest>): RequestSpec => ({ maker: "sms", args });
const makerOf = (spec: RequestSpec) => REQUEST_MAKERS[spec.maker](...spec.args);
const makerHere = (make: ((i: number) => Request) | RequestSpec) => (typeof make === "function" ? make : makerOf(make));

/**
 * The most connections one process's fetch() keeps alive to one server: past it, Bun's client
 * closes a connection after its response and opens another for the next request (a closed loop
 * of 256 opened a new TCP connection for 45-60% of its requests, of the bare Bun server as of
 * ours; `Bun.FetchSession`'s `maxIdleSockets` did not raise it). A load of more concurrent
 * requests is spread over processes of at most this many each, as devices that each hold their
 * own connection would send it.
 */
export const FETCH_CONNECTIONS = 64;

export type LoadResult = {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  statuses: Record<number, number>;
  /** Load processes the requests came from (1: this one). */
  processes?: number;
  /** Server CPU time (user + system) per request, in µs, when the server's pid was given: far less load-sensitive than rps. */
  cpuUsPerRequest?: number;
  /**
   * The same less what the server spends idle (its pollers, timers and writers' background work
   * measured over one quiet second before the run, per second of the run): the requests' own cost,
   * which does not grow when a busy machine lowers the request rate.
   */
  cpuUsPerRequestNet?: number;
  /**
   * Where the whole machine's CPU went over the same load (with the server's pid): the share of
   * it busy (all but idle and iowait, every core), and per request PostgreSQL's processes on this machine
   * (all of them: the run's database is the only one at work), and the rest (the load processes,
   * the kernel's share of the connections, anything else running), beside the server's own
   * `cpuUsPerRequest`.
   */
  machine?: { busyPercent: number; postgresUsPerRequest: number; restUsPerRequest: number };
};

/** What one load process measured: every latency, for percentiles over all the processes. */
export type RawLoad = { latencies: number[]; statuses: Record<number, number>; errors: number; seconds: number };

/** CPU seconds (user + system) process `pid` has used so far, from /proc (Linux). */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** CPU seconds (user + system) of every process of this machine whose command line starts with `prefix`, from /proc. */
async function cpuSecondsOf(prefix: string): Promise<number> {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!(await Bun.file(`/proc/${entry}/cmdline`).text()).startsWith(prefix)) continue;
      total += await cpuSeconds(Number(entry));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/** The machine's CPU seconds so far, in all and busy (all but idle and iowait), summed over its cores, from /proc/stat (Linux). */
export async function machineSeconds(): Promise<{ all: number; busy: number }> {
  const ticks = (await Bun.file("/proc/stat").text()).split("\n")[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const all = ticks.reduce((a, b) => a + b, 0);
  return { all: all / CLOCK_TICKS, busy: (all - ticks[3]! - ticks[4]!) / CLOCK_TICKS };
}

function summarize(raw: RawLoad[]): LoadResult {
  const latencies = raw.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const statuses: Record<number, number> = {};
  for (const r of raw) for (const [k, v] of Object.entries(r.statuses)) statuses[Number(k)] = (statuses[Number(k)] ?? 0) + v;
  const seconds = Math.max(...raw.map((r) => r.seconds));
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] ?? 0;
  const requests = latencies.length;
  const errors = raw.reduce((n, r) => n + r.errors, 0);
  return {
    requests,
    errors,
    seconds,
    rps: Math.round(requests / seconds),
    p50: +pct(50).toFixed(2),
    p99: +pct(99).toFixed(2),
    statuses,
    processes: raw.length,
  };
}

/** A closed loop in this process: `concurrency` workers, each sending its next request when the last one answered. */
export async function closedLoopHere(make: (i: number) => Request, concurrency: number, seconds: number, index = (i: number) => i): Promise<RawLoad> {
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let errors = 0;
  let i = 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          const res = await fetch(make(index(i++)));
          await res.arrayBuffer();
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { latencies, statuses, errors, seconds: (performance.now() - start) / 1000 };
}

/** An open loop in this process: `rate` requests per second whatever the answers, latency from each one's scheduled send time. */
export async function openLoopHere(make: (i: number) => Request, rate: number, seconds: number, index = (i: number) => i): Promise<RawLoad> {
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let errors = 0;
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  const total = Math.round(rate * seconds);
  // Requests more than a tick apart are sent on time; closer ones in the tick's batches (waking
  // for each would cost the load generator twice the CPU a request at 5,000/s, on the cores it shares).
  const tickMs = 5;
  const sparse = 1000 / rate >= tickMs;
  const dueAt = (k: number) => start + (k / rate) * 1000;
  for (let sent = 0; sent < total; ) {
    // Every request whose time has come: request k is due k / rate s after the start, the first at
    // once. (Counting only whole intervals elapsed sent each one an interval late, which every
    // latency then carried: 20 ms at 50/s, 1 ms at 1,000/s.)
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
    for (; sent < due; sent++) {
      const scheduled = dueAt(sent);
      inflight.push(
        fetch(make(index(sent)))
          .then(async (res) => {
            await res.arrayBuffer();
            statuses[res.status] = (statuses[res.status] ?? 0) + 1;
            latencies.push(performance.now() - scheduled);
          })
          .catch(() => void errors++),
      );
    }
    if (sent < total) await Bun.sleep(sparse ? Math.max(1, dueAt(sent) - performance.now()) : tickMs);
  }
  await Promise.all(inflight);
  return { latencies, statuses, errors, seconds: (performance.now() - start) / 1000 };
}

export type LoadShare = { spec: RequestSpec; kind: "closed" | "open"; share: number; seconds: number; process: number; processes: number };

/** Runs `processes` load processes (bench/load-process.ts), each with its share, and returns what each measured. */
async function inProcesses(spec: RequestSpec, kind: LoadShare["kind"], total: number, seconds: number, processes: number): Promise<RawLoad[]> {
  const children = Array.from({ length: processes }, (_, k) => {
    const share: LoadShare = { spec, kind, share: total / processes, seconds, process: k, processes };
    return Bun.spawn([process.execPath, join(import.meta.dir, "load-process.ts")], {
      stdin: new Blob([JSON.stringify(share)]),
      stdout: "pipe",
      stderr: "inherit",
    });
  });
  return Promise.all(
    children.map(async (child) => {
      const out = await new Response(child.stdout).text();
      if ((await child.exited) !== 0) throw new Error("a load process failed");
      return JSON.parse(out) as RawLoad;
    }),
  );
}

/** The server's CPU per request over a load (`run`), and the same less its idle CPU measured over a quiet second first. */
async function withServerCpu(serverPid: number | undefined, run: () => Promise<LoadResult>): Promise<LoadResult> {
  if (!serverPid) return run();
  const idleStart = await cpuSeconds(serverPid);
  await Bun.sleep(1000);
  const idlePerSecond = (await cpuSeconds(serverPid)) - idleStart;
  const [machineBefore, postgresBefore] = [await machineSeconds(), await cpuSecondsOf("postgres")];
  const cpuBefore = await cpuSeconds(serverPid);
  const started = performance.now();
  const result = await run();
  const used = (await cpuSeconds(serverPid)) - cpuBefore;
  const wall = (performance.now() - started) / 1000;
  const [machineAfter, postgresAfter] = [await machineSeconds(), await cpuSecondsOf("postgres")];
  if (result.requests > 0) {
    const perRequest = (seconds: number) => +((Math.max(0, seconds) * 1e6) / result.requests).toFixed(1);
    result.cpuUsPerRequest = perRequest(used);
    result.cpuUsPerRequestNet = perRequest(used - idlePerSecond * wall);
    const busy = machineAfter.busy - machineBefore.busy;
    const postgres = postgresAfter - postgresBefore;
    result.machine = {
      busyPercent: Math.round((100 * busy) / (machineAfter.all - machineBefore.all)),
      postgresUsPerRequest: perRequest(postgres),
      restUsPerRequest: perRequest(busy - used - postgres),
    };
  }
  return result;
}

/**
 * Closed loop: `concurrency` workers, each sending its next request when the last one answered.
 * Given a `RequestSpec` rather than a function, a concurrency above FETCH_CONNECTIONS is spread
 * over as many load processes as it takes, so that every connection stays open.
 */
export async function closedLoop(
  make: ((i: number) => Request) | RequestSpec,
  o: { concurrency: number; seconds: number; serverPid?: number },
): Promise<LoadResult> {
  const processes = Math.ceil(o.concurrency / FETCH_CONNECTIONS);
  return withServerCpu(o.serverPid, async () =>
    summarize(
      typeof make !== "function" && processes > 1
        ? await inProcesses(make, "closed", o.concurrency, o.seconds, processes)
        : [await closedLoopHere(makerHere(make), o.concurrency, o.seconds)],
    ),
  );
}

/**
 * Open loop: `rate` requests per second whatever the answers, latency from the scheduled send
 * time. Given a `RequestSpec`, the rate is shared by `processes` load processes (default 1), so
 * that a backlog of slow answers does not take more connections than one process keeps open.
 */
export async function openLoop(make: ((i: number) => Request) | RequestSpec, o: { rate: number; seconds: number; processes?: number }): Promise<LoadResult> {
  const processes = o.processes ?? 1;
  return summarize(
    typeof make !== "function" && processes > 1
      ? await inProcesses(make, "open", o.rate, o.seconds, processes)
      : [await openLoopHere(makerHere(make), o.rate, o.seconds)],
  );
}

/** One load process's share (bench/load-process.ts): request numbers interleave with the other processes'. */
export function runShare(s: LoadShare): Promise<RawLoad> {
  const make = makerOf(s.spec);
  const index = (i: number) => i * s.processes + s.process;
  return s.kind === "closed" ? closedLoopHere(make, Math.round(s.share), s.seconds, index) : openLoopHere(make, s.share, s.seconds, index);
}
