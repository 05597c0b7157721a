/**
 * `bun run soak [--minutes 30] [--devices 2000] [--sms-rate 20] [--fault-every 60]`
 *
 * A long run of a device fleet against the real server process, with faults injected in turn:
 * the server SIGKILLed and restarted, Redis stopped and started, the webhook receiver down.
 * Each simulated device heartbeats and submits SMS through an outbox that resends until it gets
 * its 202 (like device-sim's). At the end: submitted vs acknowledged vs stored vs delivered, and
 * "0 lost" or the losses; the exit code is 1 on any loss.
 *
 * Needs PostgreSQL (BENCH_DATABASE_URL, else the `test` database of the local server; a fresh database is
 * made and dropped) and redis-server on the PATH (a private one, on its own port).
 */

import { connect, httpContext, redisPrefix, type ServerProcess, startRedis, startServer, startWebhookReceiver, until } from "../test/faults/harness";
import { createTenant } from "../test/fixtures";
import { activeDevice } from "../test/fixtures-devices";
import { arg, dropDatabase, freshBenchDatabase } from "./devices-load";

const minutes = arg("minutes", 30);
const deviceCount = arg("devices", 2000);
const smsRate = arg("sms-rate", 20);
const faultEvery = arg("fault-every", 60) * 1000;
const HEARTBEAT_SECONDS = 60;
const PER_ORG = 1000; // enterprise plan's max_devices

const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

const databaseUrl = await freshBenchDatabase("soak");
const started_ = await startRedis();
if (typeof started_ === "string") throw new Error(`soak needs ${started_}`);
const redis = started_;
const receiver = startWebhookReceiver();
const prefix = redisPrefix();
const env = { DATABASE_URL: databaseUrl, REDIS_URL: redis.url, REDIS_PREFIX: prefix, HEARTBEAT_SECONDS: String(HEARTBEAT_SECONDS) };
let server: ServerProcess = await startServer(env);
const port = server.port;
const sql = connect(databaseUrl, 4);
const ctx = httpContext(() => server.url);

type Device = { id: number; token: string; outbox: Map<number, { at: number; tries: number }> };
type World = { token: string; secret: string };

async function setUp(): Promise<{ devices: Device[]; worlds: World[] }> {
  const worlds: World[] = [];
  const devices: Device[] = [];
  const orgs = Math.ceil(deviceCount / PER_ORG);
  for (let o = 0; o < orgs; o++) {
    const { org, token } = await createTenant(sql, { plan: "enterprise" });
    const [team] = await sql<{ id: number }[]>`insert into teams (organization_id, name) values (${org.id}, 'soak') returning id`;
    const made = await ctx.request("POST", "/api/webhook-integrations", {
      token,
      body: { name: "soak", url: receiver.url, timeout_seconds: 10, retry_count: 10 },
    });
    if (made.status !== 201) throw new Error(`webhook create failed: ${made.status} ${made.text}`);
    const mapped = await ctx.request("POST", `/api/webhook-integrations/${made.body.data.id}/mappings`, {
      token,
      body: { team_id: team!.id, forwarding_mode: "always" },
    });
    if (mapped.status !== 201) throw new Error(`mapping failed: ${mapped.status}`);
    worlds.push({ token, secret: made.body.data.secret });
    const count = Math.min(PER_ORG, deviceCount - o * PER_ORG);
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) {
          next++;
          const { device } = await activeDevice(ctx as never, token);
          devices.push({ id: device.id, token, outbox: new Map() });
        }
      }),
    );
    log(`organization ${org.id}: ${count} devices registered and verified`);
  }
  return { devices, worlds };
}

const started = Date.now();
const { devices, worlds } = await setUp();
// One receiver for every organization: a delivery verifies with its integration's secret.
for (const w of worlds) receiver.setSecret(w.secret);
log(`setup done in ${((Date.now() - started) / 1000).toFixed(0)} s; running ${minutes} min, ${smsRate} SMS/s, a fault every ${faultEvery / 1000} s`);

const run = crypto.randomUUID();
const counts = { submitted: 0, acked: 0, attempts: 0, answers: new Map<string, number>() };
const ackedIds = new Set<number>();
const bodyOf = (i: number) => `${run} soak ${i}`;
const messageIdOf = (i: number) => `${run.slice(0, 24)}${i.toString(16).padStart(12, "0")}`;
const receivedAt = new Map<number, string>();

async function send(d: Device, i: number) {
  counts.attempts++;
  let status = "network";
  try {
    const r = await fetch(`${server.url}/api/byos/devices/${d.id}/sms`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.token}`, "content-type": "application/json" },
      body: JSON.stringify({ from: "+15550001111", body: bodyOf(i), message_id: messageIdOf(i), received_at: receivedAt.get(i), sim_slot: 1 }),
      signal: AbortSignal.timeout(15_000),
    });
    await r.arrayBuffer();
    status = String(r.status);
  } catch {}
  counts.answers.set(status, (counts.answers.get(status) ?? 0) + 1);
  const entry = d.outbox.get(i);
  if (status === "202") {
    d.outbox.delete(i);
    if (!ackedIds.has(i)) counts.acked++;
    ackedIds.add(i);
  } else if (entry) {
    entry.tries++;
    entry.at = Date.now() + Math.min(1000 * 2 ** (entry.tries - 1), 15_000);
  }
}

let producing = true;
let running = true;
const owner = new Map<number, Device>();
/** Poisson arrivals across the fleet; each SMS goes into its device's outbox first. */
async function produce() {
  while (producing) {
    await Bun.sleep(-Math.log(1 - Math.random()) * (1000 / smsRate));
    const d = devices[Math.floor(Math.random() * devices.length)]!;
    const i = counts.submitted++;
    receivedAt.set(i, new Date().toISOString());
    owner.set(i, d);
    d.outbox.set(i, { at: 0, tries: 0 });
    void send(d, i);
  }
}
/** The outboxes' resend loop. */
async function resend() {
  while (running) {
    const now = Date.now();
    const due: [Device, number][] = [];
    for (const d of devices) for (const [i, e] of d.outbox) if (e.tries > 0 && e.at <= now) due.push([d, i]);
    for (const [d, i] of due) {
      d.outbox.get(i)!.at = Number.POSITIVE_INFINITY; // in flight
      void send(d, i);
    }
    await Bun.sleep(250);
  }
}
/** Every device heartbeats once per interval, spread over it. */
async function heartbeats() {
  let k = 0;
  while (running) {
    const d = devices[k++ % devices.length]!;
    void fetch(`${server.url}/api/byos/devices/${d.id}/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.token}`, "content-type": "application/json" },
      body: JSON.stringify({ battery_level: 80, is_charging: false }),
      signal: AbortSignal.timeout(15_000),
    })
      .then((r) => r.arrayBuffer())
      .catch(() => {});
    await Bun.sleep((HEARTBEAT_SECONDS * 1000) / devices.length);
  }
}

const faults: { name: string; at: number; ms: number }[] = [];
async function injectFaults(until: number) {
  const kinds = ["server SIGKILL + restart", "Redis stopped 10 s", "webhook receiver down 15 s"];
  for (let n = 0; Date.now() + faultEvery < until; n++) {
    await Bun.sleep(faultEvery);
    const name = kinds[n % kinds.length]!;
    const t = Date.now();
    log(`fault: ${name}`);
    if (n % 3 === 0) {
      await server.kill("SIGKILL");
      server = await startServer(env, port);
    } else if (n % 3 === 1) {
      await redis.stop();
      await Bun.sleep(10_000); // the outage itself
      await redis.start();
    } else {
      receiver.down();
      await Bun.sleep(15_000);
      receiver.up();
    }
    faults.push({ name, at: t - started, ms: Date.now() - t });
  }
}

const end = Date.now() + minutes * 60_000;
const progress = setInterval(() => {
  const pending = devices.reduce((n, d) => n + d.outbox.size, 0);
  log(`submitted ${counts.submitted}, acknowledged ${counts.acked}, in outboxes ${pending}, webhooks received ${receiver.deliveries.length}`);
}, 15_000);
const loops = [produce(), resend(), heartbeats()];
await injectFaults(end);
await Bun.sleep(Math.max(0, end - Date.now()));
producing = false;
log("load stopped; draining the outboxes");

const pendingTotal = () => devices.reduce((n, d) => n + d.outbox.size, 0);
await until("every outbox empty", () => pendingTotal() === 0, 180_000).catch(() => log(`${pendingTotal()} SMS still unacknowledged`));
running = false;
await Promise.all(loops);

const deviceIds = devices.map((d) => d.id);
const storedCount = async () =>
  (
    await sql<{ n: number; distinct_ids: number; processed: number }[]>`
    select count(*)::int as n, count(distinct message_id)::int as distinct_ids, count(message_row_id)::int as processed
    from device_sms where device_id = any(${deviceIds}::bigint[]) and body like ${`${run}%`}`
  )[0]!;
await until(
  "every stored SMS processed",
  async () => {
    const s = await storedCount();
    return s.processed === s.n;
  },
  180_000,
).catch(() => log("not every stored SMS was processed in time"));
const messageIds = (await sql<{ id: number }[]>`select id from messages where device_id = any(${deviceIds}::bigint[]) and text like ${`${run}%`}`).map(
  (r) => r.id,
);
const delivered = () => new Set(receiver.deliveries.filter((d) => d.verified).map((d) => d.messageId));
await until(
  "every message delivered to the webhook receiver",
  () => {
    const got = delivered();
    return messageIds.every((id) => got.has(id));
  },
  300_000,
).catch(() => log("not every message was delivered in time"));
clearInterval(progress);

const stored = await storedCount();
const got = delivered();
const undelivered = messageIds.filter((id) => !got.has(id)).length;
const lost = counts.acked - stored.distinct_ids;
const duplicates = stored.n - stored.distinct_ids;
const unprocessed = stored.n - messageIds.length;
const webhookIds = new Map<number, Set<string>>();
for (const d of receiver.deliveries) {
  if (d.messageId === null) continue;
  const s = webhookIds.get(d.messageId) ?? new Set();
  s.add(d.id);
  webhookIds.set(d.messageId, s);
}
const unstableIds = [...webhookIds.values()].filter((s) => s.size > 1).length;

console.log(`
Soak: ${minutes} min, ${devices.length} devices, ~${smsRate} SMS/s, faults every ${faultEvery / 1000} s
  faults injected        ${faults.length} (${faults.map((f) => `${f.name} at ${Math.round(f.at / 1000)} s`).join("; ")})
  SMS submitted          ${counts.submitted} (${counts.attempts} HTTP attempts; answers ${[...counts.answers].map(([k, v]) => `${k}: ${v}`).join(", ")})
  acknowledged (202)     ${counts.acked}
  stored (device_sms)    ${stored.distinct_ids} distinct, ${duplicates} duplicates
  processed (messages)   ${messageIds.length}
  webhooks delivered     ${messageIds.length - undelivered} messages (${receiver.deliveries.length} deliveries incl. repeats; ${unstableIds} messages with more than one webhook-id)
  ${lost === 0 && undelivered === 0 && duplicates === 0 && unprocessed === 0 && counts.acked === counts.submitted && unstableIds === 0 ? "0 lost" : `LOSSES: ${lost} acknowledged but not stored, ${counts.submitted - counts.acked} never acknowledged, ${unprocessed} not processed, ${undelivered} not delivered, ${duplicates} stored twice, ${unstableIds} unstable webhook-ids`}
  server process alive   ${!server.exited()}`);

const failed = lost !== 0 || undelivered !== 0 || duplicates !== 0 || unprocessed !== 0 || counts.acked !== counts.submitted || unstableIds !== 0;
await server.kill("SIGTERM");
await redis.stop();
receiver.down();
await sql.end();
await dropDatabase(databaseUrl).catch(() => {});
process.exit(failed ? 1 : 0);
