/**
 * Inbound SMS → delivered webhook through the whole server, the way a phone sends them: the
 * real server process on a fresh PostgreSQL database, devices submitting SMS over HTTP
 * (POST /api/byos/devices/{id}/sms) at a fixed rate whatever the answers (open loop), the
 * device SMS job turning them into messages, the fan-out job creating deliveries, the delivery
 * workers posting them to a local receiver that verifies every signature with standardwebhooks.
 * The integration, its team and mapping are made through the API. Latency runs from the moment
 * each SMS was due to be sent to its first receipt; lost and repeated deliveries are counted.
 *
 *   bun bench/webhooks-devices-e2e.ts [--rate 1000] [--seconds 60] [--devices 50]
 *
 * The same-run baseline (a bare Bun process signing and POSTing to the same receiver,
 * bench/webhook-bare.ts) and the load average before and after are printed beside the figures.
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
 * a fresh database is created and dropped.
 */
import { arg, connect, dropDatabase, freshBenchDatabase, load, openLoop, seedDevices, spawnServer } from "./devices-load";
import { startReceiver } from "./webhook-receiver";

const RATE = arg("rate", 1000);
const SECONDS = arg("seconds", 60);
const DEVICES = arg("devices", 50);

const dbUrl = await freshBenchDatabase("whdev");
const server = await spawnServer("server/main.ts", { DATABASE_URL: dbUrl, WEBHOOK_ALLOW_PRIVATE: "true" }, "/api/health");
const receiver = await startReceiver();
const loadBefore = load();
const baseline = await receiver.bare(arg("bare", 20_000), [16, 64]);
const sql = connect(dbUrl);
try {
  const { token, deviceIds } = await seedDevices(sql, DEVICES);
  const api = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { data: { id: number; secret?: string } };
  };
  const team = await api("POST", "/api/teams", { name: "bench" });
  const created = await api("POST", "/api/webhook-integrations", { name: "bench", url: receiver.endpoint("hook") });
  receiver.trust("hook", created.data.secret!);
  await api("POST", `/api/webhook-integrations/${created.data.id}/mappings`, { team_id: team.data.id, forwarding_mode: "always" });

  const start = performance.now();
  const ingest = await openLoop(
    (i) => {
      const text = `bench ${i}`;
      receiver.sentAt.set(text, start + (i / RATE) * 1000);
      return new Request(`${server.url}/api/byos/devices/${deviceIds[i % deviceIds.length]}/sms`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ from: "+15550001111", body: text, message_id: crypto.randomUUID(), received_at: new Date().toISOString(), sim_slot: 1 }),
      });
    },
    { rate: RATE, seconds: SECONDS },
  );
  const accepted = ingest.statuses[202] ?? 0;
  await receiver.settle(accepted);
  console.log(
    JSON.stringify(
      {
        rate_target: RATE,
        seconds: SECONDS,
        devices: DEVICES,
        submitted: ingest.requests + ingest.errors,
        accepted,
        submit_rate_achieved: Math.round(accepted / ingest.seconds),
        submit_p99_ms: ingest.p99,
        received_unique: receiver.seen.size,
        missing_after_60s_grace: accepted - receiver.seen.size,
        duplicates: receiver.counts.duplicates,
        unverified: receiver.counts.unverified,
        latency_ms: receiver.latencyMs(),
        latency_by_10s_ms: receiver.latencyByWindowMs(10),
        event_to_receipt_ms: receiver.eventToReceiptMs(),
        baseline_bare_sign_and_post: baseline,
        loadavg_before: loadBefore,
        loadavg_after: load(),
      },
      null,
      2,
    ),
  );
} finally {
  receiver.stop();
  server.proc.kill();
  await server.proc.exited;
  await sql.end();
  await dropDatabase(dbUrl);
}
