/**
 * Outbound sends (issue 19, performance) against one server on real PostgreSQL:
 *
 *   baseline  GET /api/me, closed loop: what a trivial authenticated request costs in this run.
 *   single    POST /api/messages, one recipient, closed loop over the online SIMs: accepted/s.
 *   bulk      POST /api/messages with 1000 recipients on SIMs whose phones are offline (nothing
 *             dispatches meanwhile): accepted recipients/s.
 *   dispatch  `--scheduled` sends (default 10,000) spread over the online SIMs with send_at one
 *             millisecond apart (1,000 scheduled sends per second, one every 200 ms per SIM: under
 *             the SIMs' 600/min policy), accepted ahead of time; latency = the hand-over
 *             (`messages.dispatched_at`, the commit that appends `message.send` for the device's
 *             channel) minus send_at. Delivery over realtime adds the event tail's wake-up
 *             (docs/benchmarks.md, events figures).
 *   hold      `--hold` scheduled sends (default 100,000) an hour ahead, by bulk requests: the
 *             server's RSS before and after, the tables' size.
 *
 *   bun bench/outbound-dispatch.ts [--sims 200] [--seconds 10] [--scheduled 10000] [--hold 100000]
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (a fresh database, dropped afterwards). Loopback only.
 * Prints lines of figures, then one JSON object.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { arg, closedLoop, connect, dropDatabase, freshBenchDatabase, seedDevices, spawnServer } from "./devices-load";

const SIMS = arg("sims", 200);
const SECONDS = arg("seconds", 10);
const SCHEDULED = arg("scheduled", 10_000);
const HOLD = arg("hold", 100_000);
const OFFLINE = 8;
const load = () => loadavg().map((v) => +v.toFixed(2));
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

  const baseline = await closedLoop(() => new Request(`${server.url}/api/me`, { headers }), { concurrency: 16, seconds: SECONDS });
  const single = await closedLoop((i) => post({ hosted_sim: onlineSims[i % onlineSims.length], to: phone(i), text: `single ${i}` }), {
    concurrency: 16,
    seconds: SECONDS,
  });
  const recipients = (n: number, from: number) => Array.from({ length: n }, (_, k) => phone(from + k));
  const bulk = await closedLoop((i) => post({ hosted_sim: offlineSims[i % offlineSims.length], to: recipients(1000, i * 1000), text: "bulk" }), {
    concurrency: 2,
    seconds: SECONDS,
  });
  out.baseline = { rps: baseline.rps, p99: baseline.p99 };
  out.single = { accepted_per_s: single.statuses[202] ? Math.round(single.statuses[202] / single.seconds) : 0, p99: single.p99, statuses: single.statuses };
  out.bulk = { recipients_per_s: Math.round(((bulk.statuses[202] ?? 0) * 1000) / bulk.seconds), p99: bulk.p99, statuses: bulk.statuses };
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

  const acceptSeconds = Math.max(20, Math.ceil(SCHEDULED / 300));
  const t0 = Date.now() + acceptSeconds * 1000;
  const marker = `sched-${t0}`;
  // An exact count, accepted ahead of t0 in batches of 16.
  for (let i = 0; i < SCHEDULED; i += 16) {
    await Promise.all(
      Array.from({ length: Math.min(16, SCHEDULED - i) }, (_, k) =>
        fetch(post({ hosted_sim: onlineSims[(i + k) % onlineSims.length], to: phone(i + k), text: marker, send_at: new Date(t0 + i + k).toISOString() })).then(
          (r) => r.arrayBuffer(),
        ),
      ),
    );
  }
  const ready = Date.now();
  if (ready > t0) console.log(`warning: scheduling took past t0 by ${ready - t0} ms`);
  const loadDuring: number[][] = [];
  for (let i = 0; i < 1200; i++) {
    const [w] = await sql<{ n: number }[]>`select count(*)::int as n from messages where text = ${marker} and dispatched_at is not null`;
    if (Date.now() > t0 && loadDuring.length < 1) loadDuring.push(load());
    if (w!.n >= SCHEDULED) break;
    await Bun.sleep(250);
  }
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
    load: loadDuring[0] ?? load(),
  };
  console.log(`dispatch at 1000 scheduled sends/s: ${JSON.stringify(out.dispatch)}`);

  const rssBefore = rssMiB(server.proc.pid);
  const holdStart = performance.now();
  const later = new Date(Date.now() + 3_600_000).toISOString();
  for (let i = 0; i < HOLD; i += 2000) {
    await Promise.all(
      [0, 1000].map(async (k) => {
        const res = await fetch(
          post({ hosted_sim: offlineSims[(i / 1000 + k / 1000) % offlineSims.length], to: recipients(1000, i + k), text: "held", send_at: later }),
        );
        await res.arrayBuffer();
        if (res.status !== 202) throw new Error(`hold: ${res.status}`);
      }),
    );
  }
  const holdSeconds = (performance.now() - holdStart) / 1000;
  const [size] = await sql<{ messages_mib: number; jobs_mib: number; held: number }[]>`
    select (pg_total_relation_size('messages') / 1048576.0)::float8 as messages_mib, (pg_total_relation_size('jobs') / 1048576.0)::float8 as jobs_mib,
      (select count(*)::int from messages where status = 'scheduled') as held`;
  out.hold = {
    held: size!.held,
    accepted_per_s: Math.round(HOLD / holdSeconds),
    rss_before_mib: rssBefore,
    rss_after_mib: rssMiB(server.proc.pid),
    messages_table_mib: +size!.messages_mib.toFixed(1),
    jobs_table_mib: +size!.jobs_mib.toFixed(1),
    load: load(),
  };
  console.log(`hold: ${JSON.stringify(out.hold)}`);
} finally {
  server.proc.kill();
  await sql.end();
  await dropDatabase(dbUrl);
}
console.log(JSON.stringify({ ...out, sims: SIMS, loadavg: load() }));
