/**
 * Inbound SMS → delivered webhook, end to end on one machine with real PostgreSQL: messages are
 * stored through storeInboundMessages at a fixed rate, group-committed (server/lib/group-commit.ts:
 * what arrives while a batch is written goes in the next; the device SMS path stores each job's
 * batch the same way) with their message.received events, the server's consumer delivers them, and a local
 * receiver verifies every signature with the standardwebhooks library. Reports latency from
 * the start of storing to receipt, and counts lost and duplicated messages.
 *
 *   bun bench/webhooks-e2e.ts [--rate 1000] [--seconds 60] [--integrations 1]
 *   bun bench/webhooks-e2e.ts --drain 20000     delivery stage alone: N message.received events in
 *                                               the log up front (stored beforehand), then the time the
 *                                               consumer and the deliveries take to drain them
 *
 * Every run first measures its baseline: a bare Bun process signing and POSTing to the same
 * receiver (bench/webhook-bare.ts), and prints each figure beside it with the load average
 * before and after (the machine is shared: a figure means little without them).
 *
 * Uses a fresh database on BENCH_DATABASE_URL's server (default postgres://postgres@127.0.0.1:5432),
 * dropped afterwards.
 */
import { readdirSync, readFileSync } from "node:fs";
import postgres from "postgres";
import { loadConfig } from "../server/config";
import { toStoredEvent } from "../server/events/log";
import { createGroupCommit } from "../server/lib/group-commit";
import { storeInboundMessages } from "../server/messages/inbound";
import { createServices } from "../server/services";
import { webhookBody } from "../server/webhooks/events";
import { autovacuumMeanwhile, autovacuumOnce, load } from "./devices-load";
import { startReceiver } from "./webhook-receiver";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const RATE = arg("rate", 1000);
const SECONDS = arg("seconds", 60);
const INTEGRATIONS = arg("integrations", 1);
const DRAIN = arg("drain", 0);
const SERVER = new URL(process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
const DB = `simhost_bench_webhooks_${Date.now()}`;

const admin = postgres({
  host: SERVER.hostname,
  port: Number(SERVER.port || 5432),
  user: SERVER.username || "postgres",
  database: "postgres",
  onnotice: () => {},
});
await admin.unsafe(`create database "${DB}"`);
const url = new URL(SERVER);
url.pathname = `/${DB}`;

const services = await createServices(loadConfig({ ...process.env, DATABASE_URL: url.toString(), WEBHOOK_ALLOW_PRIVATE: "true", LOG_LEVEL: "warn" }));
const { sql } = services;

const receiver = await startReceiver({ countOnly: DRAIN > 0 });
const { sentAt, seen } = receiver;

// One organization, team and number; INTEGRATIONS integrations always-mapped to the team.
const [org] = await sql<{ id: number }[]>`insert into organizations (name, plan) values ('bench webhooks', 'enterprise') returning id`;
const [team] = await sql<{ id: number }[]>`insert into teams (organization_id, name) values (${org!.id}, 'bench') returning id`;
const [sim] = await sql<
  { id: number }[]
>`insert into hosted_sims (number, provider, type, shared_max_orgs) values ('+19995550001', 'bench', 'shared', 5) returning id`;
await sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id, team_id) values (${sim!.id}, ${org!.id}, ${team!.id})`;
for (let i = 0; i < INTEGRATIONS; i++) {
  const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64")}`;
  receiver.trust(`hook${i}`, secret);
  const [row] = await sql<{ id: number }[]>`
    insert into webhook_integrations (organization_id, name, url, secret_sealed)
    values (${org!.id}, ${`bench ${i}`}, ${receiver.endpoint(`hook${i}`)}, ${await services.webhooks.secrets.seal(secret)}) returning id`;
  await sql`insert into webhook_mappings (webhook_integration_id, team_id, forwarding_mode) values (${row!.id}, ${team!.id}, 'always')`;
}
const stopAutovacuum = autovacuumMeanwhile(url.toString());
const loadBefore = load();
const baseline = await receiver.bare(arg("bare", 20_000), [16, 64], await sampleBody());
const result = DRAIN > 0 ? await drain() : await endToEnd();
console.log(JSON.stringify({ ...result, baseline_bare_sign_and_post: baseline, loadavg_before: loadBefore, loadavg_after: load() }, null, 2));
await finish();

/**
 * The body of one real delivery of this run's integrations (a message stored and announced in a
 * transaction rolled back afterwards, so nothing of it stays): what the bare baseline signs and
 * posts, so that the ceiling is the one for deliveries of this size.
 */
async function sampleBody(): Promise<string> {
  let body = "";
  await sql
    .begin(async (tx) => {
      await storeInboundMessages(tx, [{ hostedSimId: sim!.id, from: "+15550001111", text: "bench sample", source: "provider", receivedAt: new Date() }]);
      const [row] = await tx`
        select id, txid::text as txid, organization_id, type, hosted_sim_id, device_id, team_id, payload, created_at
        from events order by id desc limit 1`;
      body = webhookBody(toStoredEvent(row as never));
      throw new Error("rolled back");
    })
    .catch(() => {});
  return body;
}

/** The delivery stage alone: messages and their events stored beforehand, then the workers started. */
async function drain() {
  // The consumer's position, at the log's head before the events are appended (start makes it).
  await services.webhooks.start();
  await services.webhooks.stop();
  for (let done = 0; done < DRAIN; done += 500) {
    await sql.begin(async (tx) => {
      const inputs = Array.from({ length: Math.min(DRAIN, done + 500) - done }, (_, k) => ({
        hostedSimId: sim!.id,
        from: "+15550001111",
        text: `bench ${done + k}`,
        source: "provider" as const,
        receivedAt: new Date(),
      }));
      // Stored and announced: message.received in the log (webhook deliveries are made from it).
      await storeInboundMessages(tx, inputs);
    });
  }
  // Statistics of the stored messages and events, as autovacuum gathers them after such a load.
  if (!process.env.BENCH_NO_ANALYZE) await autovacuumOnce(sql);
  const t0 = performance.now();
  const cpu = process.cpuUsage();
  const threadsBefore = threadTicks();
  services.start();
  const deadline = t0 + 300_000;
  let counted = await receiver.counted();
  while (counted.distinct < DRAIN * INTEGRATIONS && performance.now() < deadline) {
    await Bun.sleep(20);
    counted = await receiver.counted();
  }
  const seconds = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  const threadsAfter = threadTicks();
  const byThread: Record<string, number> = {};
  for (const [tid, { name, ticks }] of threadsAfter) byThread[name] = (byThread[name] ?? 0) + ticks - (threadsBefore.get(tid)?.ticks ?? 0);
  await Bun.sleep(1_000); // late repeats
  const final = await receiver.counted();
  return {
    drained: counted.distinct,
    duplicates: final.duplicates,
    unverified: final.unverified,
    seconds: Math.round(seconds * 10) / 10,
    deliveries_per_second: Math.round(counted.distinct / seconds),
    // This process's CPU per delivery (the whole server side: consumer, lanes, signing, POSTs,
    // records; PostgreSQL apart), beside the bare baseline's cpu_us_per_post.
    cpu_us_per_delivery: Math.round((used.user + used.system) / counted.distinct),
    // The same split by thread (Linux /proc, 10 ms ticks): the JS thread ("bun") against Bun's
    // HTTP client thread and the JIT's, to tell the pipeline's own work from the POST's.
    cpu_us_per_delivery_by_thread: Object.fromEntries(
      Object.entries(byThread)
        .filter(([, ticks]) => ticks > 0)
        .map(([name, ticks]) => [name, Math.round((ticks * 10_000) / Math.max(1, counted.distinct))]),
    ),
    // First attempts the dispatcher gave to the job queue untried (its lane too long or too slow).
    handed_to_job_queue: services.webhooks.handedOver(),
  };
}

/** CPU ticks (user + system, 1/100 s) of each thread of this process, by thread id; empty off Linux. */
function threadTicks(): Map<string, { name: string; ticks: number }> {
  const out = new Map<string, { name: string; ticks: number }>();
  try {
    for (const tid of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      out.set(tid, { name: stat.slice(stat.indexOf("(") + 1, close), ticks: Number(fields[11]) + Number(fields[12]) });
    }
  } catch {
    // not Linux: the split is left out
  }
  return out;
}

async function endToEnd() {
  services.start();

  // Open loop: every 10 ms, the messages due by now are submitted; each resolves once committed.
  const store = createGroupCommit((texts: string[]) =>
    sql.begin((tx) =>
      storeInboundMessages(
        tx,
        texts.map((text) => ({ hostedSimId: sim!.id, from: "+15550001111", text, source: "provider" as const, receivedAt: new Date() })),
      ),
    ),
  );
  const total = RATE * SECONDS;
  let sent = 0;
  let storeErrors = 0;
  const start = performance.now();
  const inFlight = new Set<Promise<void>>();
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * RATE));
    for (; sent < due; sent++) {
      const text = `bench ${sent}`;
      sentAt.set(text, performance.now());
      const p = store
        .submit(text)
        .then(() => {
          services.events.notify();
        })
        .catch(() => {
          storeErrors++;
        });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    await Bun.sleep(10);
  }
  await Promise.all(inFlight);
  const sendSeconds = (performance.now() - start) / 1000;

  const expected = (total - storeErrors) * INTEGRATIONS;
  await receiver.settle(expected);
  const [dead] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where status <> 'succeeded'`;
  return {
    rate_target: RATE,
    seconds: SECONDS,
    integrations: INTEGRATIONS,
    stored: total - storeErrors,
    store_errors: storeErrors,
    send_rate_achieved: Math.round((total - storeErrors) / sendSeconds),
    received_unique: seen.size,
    missing_after_60s_grace: expected - seen.size,
    duplicates: receiver.counts.duplicates,
    unverified: receiver.counts.unverified,
    not_succeeded_rows: dead!.n,
    latency_ms: receiver.latencyMs(),
    latency_by_10s_ms: receiver.latencyByWindowMs(10),
    event_to_receipt_ms: receiver.eventToReceiptMs(),
  };
}

async function finish() {
  await stopAutovacuum();
  receiver.stop();
  await services.close();
  await admin.unsafe(`drop database if exists "${DB}" with (force)`);
  await admin.end();
}
