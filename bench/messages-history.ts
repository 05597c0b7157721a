/**
 * Message history benchmark: GET /api/messages pages of 50 on a number holding 1,000,000
 * messages, through the whole app (auth, validation, SQL, JSON) with real PostgreSQL.
 *
 *   bun bench/messages-history.ts [--messages 1000000] [--runs 1000]
 *
 * Uses BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/simhost_bench), created
 * and migrated when missing; the data set is built once and reused by later runs.
 */
import postgres from "postgres";
import { buildApp } from "../server/app";
import { issueSession } from "../server/auth/tokens";
import { loadConfig } from "../server/config";
import { messageHistory } from "../server/messages/history-store";
import { createServices } from "../server/services";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const MESSAGES = arg("messages", 1_000_000);
const RUNS = arg("runs", 1000);
const URL_ = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/simhost_bench";
const NUMBER = "+19990000001";

async function ensureDatabase(url: string) {
  const target = new URL(url);
  const name = target.pathname.slice(1);
  const admin = postgres({
    host: target.hostname,
    port: Number(target.port || 5432),
    user: target.username || "postgres",
    database: "postgres",
    onnotice: () => {},
  });
  const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
  if (!exists) await admin.unsafe(`create database "${name.replaceAll('"', "")}"`);
  await admin.end();
}

type Sql = Awaited<ReturnType<typeof createServices>>["sql"];

/** The organization and number of the data set, built in batches with triggers off (seqs given, counts written once at the end). */
async function ensureDataSet(sql: Sql) {
  const [found] = await sql<{ sim: number; org: number; total: number }[]>`
    select h.id as sim, c.organization_id as org, c.total from hosted_sims h
    join message_visibility_counts c on c.hosted_sim_id = h.id where h.number = ${NUMBER}`;
  if (found && found.total >= MESSAGES) return found;
  await sql`delete from hosted_sims where number = ${NUMBER}`;
  const [org] = await sql<{ id: number }[]>`insert into organizations (name, plan) values ('bench history', 'enterprise') returning id`;
  const [sim] = await sql<
    { id: number }[]
  >`insert into hosted_sims (number, provider, type, shared_max_orgs) values (${NUMBER}, 'bench', 'shared', 5) returning id`;
  await sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${sim!.id}, ${org!.id})`;
  const batch = 100_000;
  for (let start = 0; start < MESSAGES; start += batch) {
    const n = Math.min(batch, MESSAGES - start);
    await sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await tx`
        with m as (
          insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source, received_at, created_at)
          select ${sim!.id}, ${NUMBER}, 'inbound', '+1555' || lpad((i % 9973)::text, 7, '0'), ${NUMBER},
                 'bench message ' || (${start}::int + i) || case when i % 10 = 0 then ' code 1234' else '' end, 'received', 'provider',
                 now() - make_interval(secs => ${MESSAGES - start}::int - i), now() - make_interval(secs => ${MESSAGES - start}::int - i)
          from generate_series(1, ${n}::int) i order by i
          returning id)
        insert into message_visibility (organization_id, hosted_sim_id, message_id, seq)
        select ${org!.id}, ${sim!.id}, id, ${start}::bigint + row_number() over (order by id) from m`;
    });
    process.stdout.write(`\rloaded ${start + n} messages`);
  }
  process.stdout.write("\n");
  await sql`
    insert into message_visibility_counts (organization_id, hosted_sim_id, total, inbound, last_seq)
    values (${org!.id}, ${sim!.id}, ${MESSAGES}, ${MESSAGES}, ${MESSAGES})
    on conflict (organization_id, hosted_sim_id) do update set total = excluded.total, inbound = excluded.inbound, last_seq = excluded.last_seq`;
  return { sim: sim!.id, org: org!.id, total: MESSAGES };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** HTTP through the whole app; the queries take turns, so load from other processes hits them alike. */
async function measure(app: ReturnType<typeof buildApp>, token: string, queries: string[], runs: number) {
  const call = async (query: string) => {
    const res = await app.handle(new Request(`http://localhost/api/messages?${query}`, { headers: { authorization: `Bearer ${token}` } }));
    if (res.status !== 200) throw new Error(`${query}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  for (let i = 0; i < Math.min(50, runs); i++) for (const q of queries) await call(q);
  const times = queries.map(() => [] as number[]);
  for (let i = 0; i < runs; i++) {
    for (const [k, q] of queries.entries()) {
      const t0 = performance.now();
      await call(q);
      times[k]!.push(performance.now() - t0);
    }
  }
  return queries.map((query, k) => summary(query, times[k]!));
}

function summary(query: string, samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { query, runs: sorted.length, p50: pct(sorted, 50), p95: pct(sorted, 95), p99: pct(sorted, 99), max: sorted[sorted.length - 1]! };
}

/** Execution time inside PostgreSQL (EXPLAIN ANALYZE of the page query), without round trips or client scheduling. */
async function measureDatabase(runs: number) {
  const [c] = await sql<{ last_seq: number }[]>`select last_seq from message_visibility_counts where organization_id = ${org} and hosted_sim_id = ${sim}`;
  const times: Record<number, number[]> = { 1: [], 1000: [] };
  for (let i = 0; i < runs; i++) {
    for (const page of [1, 1000]) {
      const high = c!.last_seq - (page - 1) * 50;
      const plan = await sql.unsafe(
        `explain (analyze, timing off, summary on)
         select m.id, v.team_id from (select v.message_id, v.seq from message_visibility v
           where v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.seq between ${high - 49} and ${high}) p
         join message_visibility v on v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.seq = p.seq
         join messages m on m.id = p.message_id order by p.seq desc`,
      );
      const line = plan.map((r) => String(r["QUERY PLAN"])).find((l) => l.startsWith("Execution Time"));
      times[page]!.push(Number(line?.match(/[\d.]+/)?.[0]));
    }
  }
  return [1, 1000].map((page) => summary(`database only: page=${page}`, times[page]!));
}

await ensureDatabase(URL_);
const services = await createServices(loadConfig({ DATABASE_URL: URL_, LOG_LEVEL: "silent", DATA_DIR: "/tmp/simhost-bench" }));
const app = buildApp(services);
const sql = services.sql;
const { sim, org } = await ensureDataSet(sql);
// Fresh statistics and visibility map, as autovacuum keeps them on a live server.
await sql`vacuum analyze message_visibility`;
await sql`vacuum analyze messages`;
const [user] = await sql<{ id: number }[]>`
  insert into users (name, email, password_hash) values ('bench', ${`bench-${crypto.randomUUID()}@example.test`}, 'x') returning id`;
await sql`insert into memberships (user_id, organization_id, role) values (${user!.id}, ${org}, 'owner')`;
// A user just made: credentials epoch 0.
const { token } = (await issueSession(sql, user!.id, { ttlSeconds: 3600, epoch: 0 }))!;

/** The store alone (the page's SQL, no HTTP or authentication), pages 1 and 1,000 interleaved. */
async function measureStore(runs: number) {
  const times: Record<number, number[]> = { 1: [], 1000: [] };
  for (let i = 0; i < runs; i++) {
    for (const page of [1, 1000]) {
      const t0 = performance.now();
      const found = await messageHistory(sql, { organizationId: org, hostedSimId: sim, filter: {}, page, perPage: 50 });
      times[page]!.push(performance.now() - t0);
      if (found?.rows.length !== 50) throw new Error(`page ${page}: ${found?.rows.length} rows`);
    }
  }
  return [1, 1000].map((page) => summary(`store only: page=${page}`, times[page]!));
}

const results = [
  ...(await measureDatabase(RUNS)),
  ...(await measureStore(RUNS)),
  ...(await measure(app, token, [`hosted_sim=${sim}&per_page=50&page=1`, `hosted_sim=${sim}&per_page=50&page=1000`], RUNS)),
  ...(await measure(
    app,
    token,
    [
      `hosted_sim=${sim}&per_page=50&page=10000`,
      `hosted_sim=${sim}&per_page=50&page=1&direction=inbound`,
      `hosted_sim=${sim}&per_page=50&page=1000&direction=inbound`,
    ],
    Math.min(RUNS, 200),
  )),
  ...(await measure(app, token, [`hosted_sim=${sim}&per_page=50&page=1&q=code`], Math.min(RUNS, 20))),
];
console.log(`messages on the number: ${MESSAGES}`);
console.log("query | runs | p50 ms | p95 ms | p99 ms | max ms");
for (const r of results)
  console.log(`${r.query.replace(/hosted_sim=\d+&/, "")} | ${r.runs} | ${r.p50.toFixed(2)} | ${r.p95.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.max.toFixed(2)}`);

/** The page query as messageHistory runs it (server/messages/history-store.ts), for the plan. */
const explain = async (ids: string) =>
  (
    await sql.unsafe(
      `explain (analyze, buffers, costs off)
       select m.id, v.team_id from (${ids}) p
       join message_visibility v on v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.seq = p.seq
       join messages m on m.id = p.message_id order by p.seq desc`,
    )
  )
    .map((r) => r["QUERY PLAN"])
    .join("\n");
const [counts] = await sql<{ last_seq: number }[]>`select last_seq from message_visibility_counts where organization_id = ${org} and hosted_sim_id = ${sim}`;
const high = counts!.last_seq - 999 * 50;
console.log(
  `\nEXPLAIN page 1000 (keyset: seq range):\n${await explain(
    `select v.message_id, v.seq from message_visibility v where v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.seq between ${high - 49} and ${high}`,
  )}`,
);
console.log(
  `\nEXPLAIN page 1000 with direction=inbound (offset fallback):\n${await explain(
    `select v.message_id, v.seq from message_visibility v where v.organization_id = ${org} and v.hosted_sim_id = ${sim} and v.outbound = false order by v.seq desc limit 50 offset 49950`,
  )}`,
);
await sql`delete from users where id = ${user!.id}`;
await services.close();
// Machine-readable last line, for bench/run.ts.
console.log(JSON.stringify({ messages: MESSAGES, results }));
