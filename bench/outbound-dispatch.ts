/**
 * Outbound sends (issue 19, performance) against one server on real PostgreSQL:
 *
 *   baseline  GET /api/me, closed loop: what a trivial authenticated request costs in this run.
 *   single    POST /api/messages, one recipient, closed loop over the online SIMs: accepted/s.
 *   bulk      POST /api/messages with 1000 recipients on SIMs whose phones are offline (nothing
 *             dispatches meanwhile): accepted recipients/s.
 *   dispatch  `--scheduled` sends (default 10,000) spread over the online SIMs with send_at one
 *             millisecond apart (1,000 scheduled sends per second, one every 200 ms per SIM: under
 *             the SIMs' 600/min policy), seeded as `scheduled` rows with their dispatch jobs as
 *             the send would store them (acceptance is measured above); latency = the hand-over
 *             (`messages.dispatched_at`, the commit that appends `message.send` for the device's
 *             channel) minus send_at. Delivery over realtime adds the event tail's wake-up
 *             (docs/benchmarks.md, events figures).
 *   hold      `--hold` scheduled sends (default 100,000) an hour ahead: the server's RSS before
 *             and after, the tables' size (they are rows, not server memory).
 *
 *   bun bench/outbound-dispatch.ts [--sims 200] [--seconds 10] [--scheduled 10000] [--hold 100000]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (a fresh database, dropped afterwards). Loopback only.
 * Prints lines of figures, then one JSON object.
 */
import { readFileSync } from "node:fs";
import { arg, closedLoop, connect, cpuSeconds, dropDatabase, freshBenchDatabase, load, seedDevices, spawnServer } from "./devices-load";

const SIMS = arg("sims", 200);
const SECONDS = arg("seconds", 10);
const SCHEDULED = arg("scheduled", 10_000);
const HOLD = arg("hold", 100_000);
const OFFLINE = 8;
const rssMiB = (pid: number) => +(Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024).toFixed(1);

const dbUrl = await freshBenchDatabase("outbound");
const server = await spawnServer("server/main.ts", { DATABASE_URL: dbUrl }, "/api/health");
const sql = connect(dbUrl);
const out: Record<string, unknown> = {};
try {
  const seeded = await seedDevices(sql, SIMS + OFFLINE);
  const online = seeded.deviceIds.slice(0, SIMS);
  // The phones are online for the whole run (no heartbeats are sent: last_seen_at ahead keeps them so).
  await sql`update devices set is_online = true, last_seen_at = now() + interval '1 day' where id = any(${online}::bigint[])`;
  await sql`
    insert into sending_policies (organization_id, messages_per_minute, min_delay_ms, max_delay_ms, daily_cap, time_zone)
    values (${seeded.orgId}, 600, 0, 0, 100000, 'UTC')`;
  await sql`update plans set monthly_messages = 100000000`;
  const sims = await sql<{ id: number; device_id: number }[]>`
    select hosted_sim_id as id, device_id from sim_cards where device_id = any(${seeded.deviceIds}::bigint[]) order by device_id`;
  const onlineSims = sims.filter((s) => online.includes(s.device_id)).map((s) => s.id);
  const offlineSims = sims.filter((s) => !online.includes(s.device_id)).map((s) => s.id);
  const headers = { authorization: `Bearer ${seeded.token}`, "content-type": "application/json" };
  const post = (body: unknown) => new Request(`${server.url}/api/messages`, { method: "POST", headers, body: JSON.stringify(body) });
  const phone = (i: number) => `+1555${String(i % 10_000_000).padStart(7, "0")}`;

  const pid = server.proc.pid;
  const baseline = await closedLoop(() => new Request(`${server.url}/api/me`, { headers }), { concurrency: 16, seconds: SECONDS, serverPid: pid });
  const single = await closedLoop((i) => post({ hosted_sim: onlineSims[i % onlineSims.length], to: phone(i), text: `single ${i}` }), {
    concurrency: 16,
    seconds: SECONDS,
    serverPid: pid,
  });
  const recipients = (n: number, from: number) => Array.from({ length: n }, (_, k) => phone(from + k));
  const bulk = await closedLoop((i) => post({ hosted_sim: offlineSims[i % offlineSims.length], to: recipients(1000, i * 1000), text: "bulk" }), {
    concurrency: 2,
    seconds: SECONDS,
    serverPid: pid,
  });
  // Server CPU per request (user + system, from /proc): less sensitive to a busy machine than the rates.
  out.baseline = { rps: baseline.rps, p99: baseline.p99, server_cpu_us: baseline.cpuUsPerRequest };
  out.single = {
    accepted_per_s: single.statuses[202] ? Math.round(single.statuses[202] / single.seconds) : 0,
    p99: single.p99,
    statuses: single.statuses,
    server_cpu_us: single.cpuUsPerRequest,
  };
  out.bulk = {
    recipients_per_s: Math.round(((bulk.statuses[202] ?? 0) * 1000) / bulk.seconds),
    p99: bulk.p99,
    statuses: bulk.statuses,
    server_cpu_us_per_recipient: bulk.cpuUsPerRequest === undefined ? undefined : +(bulk.cpuUsPerRequest / 1000).toFixed(1),
  };
  console.log(
    `accepted: single ${JSON.stringify(out.single)}, bulk ${JSON.stringify(out.bulk)}; baseline GET /api/me ${baseline.rps}/s p99 ${baseline.p99} ms; load ${load()}`,
  );

  // Let the single sends' hand-overs finish before the dispatch run.
  for (let i = 0; i < 600; i++) {
    const [w] = await sql<
      { n: number }[]
    >`select count(*)::int as n from messages where status = 'queued' and dispatched_at is null and hosted_sim_id = any(${onlineSims}::bigint[])`;
    if (w!.n === 0) break;
    await Bun.sleep(100);
  }

  // Dispatch: the scheduled sends are seeded (acceptance was measured above; here only the path
  // from send_at to the hand-over counts), with their dispatch jobs due at send_at.
  const t0 = Date.now() + 15_000;
  const marker = `sched-${t0}`;
  await seedScheduled(onlineSims, SCHEDULED, t0, 1, marker);
  // Statistics as a server that has run for a while has them (autovacuum analyzes within a
  // minute): the tables filled faster than that here, and with none the planner takes the
  // outbound partial indexes for nearly empty (docs/benchmarks.md, outbound).
  await sql`analyze messages`;
  await sql`analyze message_visibility`;
  await sql`analyze jobs`;
  while (Date.now() < t0) await Bun.sleep(50);
  const cpuAtStart = await cpuSeconds(pid);
  const dbCpuAtStart = await databaseCpu();
  const loadDuring: number[][] = [];
  for (let i = 0; i < 2400; i++) {
    const [w] = await sql<{ n: number }[]>`select count(*)::int as n from messages where text = ${marker} and dispatched_at is not null`;
    if (Date.now() > t0 + SCHEDULED / 2 && loadDuring.length < 1) loadDuring.push(load());
    if (w!.n >= SCHEDULED) break;
    await Bun.sleep(250);
  }
  const dispatchCpu = (await cpuSeconds(pid)) - cpuAtStart;
  const dbCpuAtEnd = await databaseCpu();
  let dispatchDbCpu = 0;
  for (const [backend, seconds] of dbCpuAtEnd) dispatchDbCpu += seconds - (dbCpuAtStart.get(backend) ?? 0);
  const [lat] = await sql<{ n: number; p50: number; p99: number; max: number }[]>`
    select count(*)::int as n,
      percentile_cont(0.5) within group (order by extract(epoch from dispatched_at - send_at) * 1000)::float8 as p50,
      percentile_cont(0.99) within group (order by extract(epoch from dispatched_at - send_at) * 1000)::float8 as p99,
      max(extract(epoch from dispatched_at - send_at) * 1000)::float8 as max
    from messages where text = ${marker} and dispatched_at is not null`;
  out.dispatch = {
    scheduled: SCHEDULED,
    rate_per_s: 1000,
    dispatched: lat!.n,
    p50_ms: Math.round(lat!.p50),
    p99_ms: Math.round(lat!.p99),
    max_ms: Math.round(lat!.max),
    server_cpu_us_per_send: lat!.n > 0 ? Math.round((dispatchCpu * 1e6) / lat!.n) : null,
    db_cpu_us_per_send: lat!.n > 0 ? Math.round((dispatchDbCpu * 1e6) / lat!.n) : null,
    load: loadDuring[0] ?? load(),
  };
  console.log(`dispatch at 1000 scheduled sends/s: ${JSON.stringify(out.dispatch)}`);

  // Hold: sends scheduled an hour ahead live in PostgreSQL (messages + their dispatch jobs), not in the server.
  const rssBefore = rssMiB(server.proc.pid);
  await seedScheduled(offlineSims, HOLD, Date.now() + 3_600_000, 0, "held");
  await Bun.sleep(3000);
  const [size] = await sql<{ messages_mib: number; jobs_mib: number; held: number }[]>`
    select (pg_total_relation_size('messages') / 1048576.0)::float8 as messages_mib, (pg_total_relation_size('jobs') / 1048576.0)::float8 as jobs_mib,
      (select count(*)::int from messages where status = 'scheduled') as held`;
  out.hold = {
    held: size!.held,
    rss_before_mib: rssBefore,
    rss_after_mib: rssMiB(server.proc.pid),
    messages_table_mib: +size!.messages_mib.toFixed(1),
    jobs_table_mib: +size!.jobs_mib.toFixed(1),
    load: load(),
  };
  console.log(`hold: ${JSON.stringify(out.hold)}`);

  /**
   * CPU seconds (/proc) of each PostgreSQL backend connected to the bench database but this one
   * (the server's pool), by pid: the database's share of the work, the rest of the server's
   * PostgreSQL being shared with other databases. A backend that exits meanwhile is not counted.
   */
  async function databaseCpu() {
    const backends = await sql<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;
    const out = new Map<number, number>();
    for (const b of backends) out.set(b.pid, await cpuSeconds(b.pid).catch(() => 0));
    return out;
  }

  /** `n` scheduled sends over `simIds` in turn, send_at `stepMs` apart from `at`, each with its dispatch job due then. */
  async function seedScheduled(simIds: number[], n: number, at: number, stepMs: number, text: string) {
    for (let from = 0; from < n; from += 20_000) {
      const count = Math.min(20_000, n - from);
      await sql`
        with s as (
          select h.id, h.number, c.device_id, row_number() over (order by h.id) as k
          from hosted_sims h join sim_cards c on c.hosted_sim_id = h.id where h.id = any(${simIds}::bigint[])),
        m as (
          insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source, device_id, sim_slot, organization_id, send_at, status_updated_at)
          select s.id, s.number, 'outbound', s.number, '+1555' || lpad(g::text, 7, '0'), ${text}, 'scheduled', 'api', s.device_id, 1, ${seeded.orgId},
            ${new Date(at)}::timestamptz + (g * ${stepMs}) * interval '1 millisecond', now()
          from generate_series(${from}::int, ${from + count - 1}::int) g join s on s.k = (g % ${simIds.length}) + 1
          returning id, hosted_sim_id, send_at),
        v as (insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id, outbound) select ${seeded.orgId}, hosted_sim_id, id, null, true from m)
        insert into jobs (queue, payload, max_attempts, run_at) select 'message.outbound.dispatch', jsonb_build_object('message_id', id), 10, send_at from m`;
    }
  }
} finally {
  server.proc.kill();
  await sql.end();
  await dropDatabase(dbUrl);
}
console.log(JSON.stringify({ ...out, sims: SIMS, loadavg: load() }));
