/**
 * Broadcast latency: one event to 1,000 subscribers of one channel, time from `publish` to the
 * last subscriber's receipt, over many rounds.
 *
 *   bun bench/realtime-broadcast.ts [one|redis] [subscribers=1000] [rounds=200]
 *
 * `one`: one instance (embedded database, in-process bus); each round's row is handed straight
 * to its hub (`deliverEvents`, as the event tail hands it rows of the log): encoding and the
 * fan-out to sockets, not the log. `redis`: two instances on one fresh PostgreSQL database
 * (BENCH_DATABASE_URL's server) sharing Redis (REDIS_URL, default redis://127.0.0.1:6379); each
 * round appends the event to the log on A (a transaction, then `notify`), every subscriber is
 * connected to B, whose tail is woken over Redis and reads the log: the whole cross-instance path,
 * commit included. Subscribers are authorized through B's auth endpoint as pusher-js does it.
 * The instances run in this process, the subscribers in a child process; times are wall-clock.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp } from "../server/app";
import { loadConfig } from "../server/config";
import { appendEvents } from "../server/events/log";
import { randomString } from "../server/lib/crypto";
import { createServices } from "../server/services";
import { dropDatabase, freshBenchDatabase } from "./devices-load";
import { seedChannels, subscribeOne } from "./realtime-subscribe";

const mode = (process.argv[2] === "redis" ? "redis" : "one") as "one" | "redis";
const SUBSCRIBERS = Number(process.argv[3] ?? 1000);
const ROUNDS = Number(process.argv[4] ?? 200);
const KEY = "benchkey";
const SECRET = "bench-secret-0123456789";

async function instance(env: Record<string, string>) {
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: "silent",
    PORT: "0",
    DATA_DIR: mkdtempSync(join(tmpdir(), "simhost-bench-")),
    PUSHER_APP_KEY: KEY,
    PUSHER_APP_SECRET: SECRET,
    // Every subscriber comes from 127.0.0.1: the per-address cap raised past their count.
    WS_MAX_CONNECTIONS_PER_ADDRESS: "1000000",
    ...env,
  });
  const services = await createServices(config);
  const app = buildApp(services);
  app.listen({ port: 0, hostname: "127.0.0.1" });
  return { services, app, port: app.server!.port! };
}

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes on one machine. */
const epoch = () => performance.timeOrigin + performance.now();

/**
 * Client side, in its own process: `--clients <port> <n> <token> <channel>` subscribes n sockets to
 * simhost, `--bare <port> <n>` opens n sockets to the bare server (subscribed on open); then prints
 * "ready" and, per round, "<seq> <epoch ms of the last receipt>".
 */
async function runClients(open: () => Promise<WebSocket>, n: number) {
  const counts = new Map<number, number>();
  const onFrame = (raw: string) => {
    const at = raw.indexOf('\\"seq\\":');
    if (at < 0) return;
    const seq = Number.parseInt(raw.slice(at + 8), 10);
    const c = (counts.get(seq) ?? 0) + 1;
    counts.set(seq, c);
    if (c === n) {
      counts.delete(seq);
      process.stdout.write(`${seq} ${epoch()}\n`);
    }
  };
  const one = async () => {
    const ws = await open();
    ws.onmessage = (m) => onFrame(String(m.data));
  };
  for (let i = 0; i < n; i += 200) await Promise.all(Array.from({ length: Math.min(200, n - i) }, one));
  process.stdout.write("ready\n");
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const round2 = (v: number) => Math.round(v * 100) / 100;

/**
 * Starts the client process with `args`, then per round calls `publish(r)` and times it to the
 * last subscriber's receipt; the first 10 rounds warm up the JIT and are not counted.
 */
async function measureRounds(args: string[], publish: (r: number) => unknown) {
  const child = Bun.spawn([process.execPath, import.meta.path, ...args], { stdout: "pipe", stderr: "inherit" });
  const lines = (async function* () {
    let buffer = "";
    for await (const chunk of child.stdout) {
      buffer += new TextDecoder().decode(chunk);
      let nl = buffer.indexOf("\n");
      while (nl >= 0) {
        yield buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf("\n");
      }
    }
  })();
  const next = async () => (await lines.next()).value as string;
  if ((await next()) !== "ready") throw new Error("clients did not start");
  const latencies: number[] = [];
  const publishCalls: number[] = [];
  for (let r = 0; r < ROUNDS + 10; r++) {
    const t0 = epoch();
    await publish(r);
    if (r >= 10) publishCalls.push(epoch() - t0);
    const [seq, at] = (await next()).split(" ");
    if (Number(seq) !== r) throw new Error(`expected round ${r}, got ${seq}`);
    if (r >= 10) latencies.push(Number(at) - t0);
  }
  child.kill();
  latencies.sort((x, y) => x - y);
  publishCalls.sort((x, y) => x - y);
  return {
    p50_ms: round2(percentile(latencies, 50)),
    p99_ms: round2(percentile(latencies, 99)),
    max_ms: round2(latencies[latencies.length - 1]!),
    publish_call_p50_ms: round2(percentile(publishCalls, 50)),
    publish_call_p99_ms: round2(percentile(publishCalls, 99)),
  };
}

const message = { id: 0, hosted_sim_id: 1, number: "+15550000000", direction: "inbound", from: "+15551112222", text: "x".repeat(160), status: "received" };
const payloadOf = (r: number) => ({ seq: r, message: { ...message, id: r } });

/** simhost: the instance(s), the subscribers, the rounds. */
async function measureSimhost() {
  const redisEnv: Record<string, string> =
    mode === "redis" ? { REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", REDIS_PREFIX: `simhost-bench-${randomString(8)}:` } : {};
  const databaseUrl = mode === "redis" ? await freshBenchDatabase("broadcast") : null;
  const dbEnv: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
  const a = await instance({ ...redisEnv, ...dbEnv });
  const b = mode === "redis" ? await instance({ ...redisEnv, ...dbEnv }) : a;
  const { token, organizations } = await seedChannels(b.services.sql);
  const organizationId = organizations[0]!;
  const channel = `private-organization.${organizationId}`;
  const figures = await measureRounds(["--clients", String(b.port), String(SUBSCRIBERS), token, channel], async (r) => {
    const payload = payloadOf(r);
    if (mode === "one") {
      // Straight to the hub, as the event tail hands it rows of the log (the database is not measured here).
      const position = { txid: "0", id: r };
      const row = { cursor: `evt_${r}`, position, organizationId, type: "message.received" as const, payload, createdAt: new Date() };
      a.services.realtime.deliverEvents([{ ...row, hostedSimId: null, deviceId: null, teamId: null }]);
    } else {
      // As a change on A does it: append in a transaction, then wake every instance's tail.
      await a.services.sql.begin((tx) => appendEvents(tx, [{ organizationId, type: "message.received", payload }]));
      a.services.events.notify();
    }
  });
  for (const i of mode === "redis" ? [a, b] : [a]) {
    i.services.realtime.shutdown();
    await i.app.stop(true);
    await i.services.close();
  }
  if (databaseUrl) await dropDatabase(databaseUrl);
  return figures;
}

/** The same-run baseline: a bare Bun server publishing a frame of the same size to a topic of as many sockets. */
async function measureBare() {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (req, srv) => (srv.upgrade(req) ? undefined : new Response("upgrade", { status: 400 })),
    websocket: { open: (ws) => void ws.subscribe("bench"), message: () => {} },
  });
  const figures = await measureRounds(["--bare", String(server.port), String(SUBSCRIBERS)], (r) => {
    const frame = JSON.stringify({
      event: "message.received",
      channel: "private-organization.1",
      data: JSON.stringify({ ...payloadOf(r), event_id: `evt_${r}` }),
    });
    server.publish("bench", frame);
  });
  server.stop(true);
  return figures;
}

const bareSocket = (port: number) =>
  new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
    ws.onopen = () => resolve(ws);
    ws.onerror = () => reject(new Error("socket error"));
  });

if (process.argv[2] === "--clients") {
  const [port, n, token, channel] = process.argv.slice(3);
  await runClients(() => subscribeOne(Number(port), KEY, token!, channel!), Number(n));
} else if (process.argv[2] === "--bare") {
  await runClients(() => bareSocket(Number(process.argv[3])), Number(process.argv[4]));
} else {
  const simhost = await measureSimhost();
  const bare = await measureBare();
  console.log(
    JSON.stringify(
      { mode, subscribers: SUBSCRIBERS, rounds: ROUNDS, ...simhost, baseline_bare_publish: bare, ratio_p99: round2(simhost.p99_ms / bare.p99_ms) },
      null,
      2,
    ),
  );
  process.exit(0);
}
