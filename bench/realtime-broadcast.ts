/**
 * Broadcast latency: one event to 1,000 subscribers of one channel, time from `publish` to the
 * last subscriber's receipt, over many rounds.
 *
 *   bun bench/realtime-broadcast.ts [one|redis] [subscribers=1000] [rounds=200]
 *
 * `one`: one instance, in-process bus. `redis`: two instances sharing Redis (REDIS_URL, default
 * redis://127.0.0.1:6379); the event is published on A, every subscriber is connected to B.
 * Since issue 16 events reach the hub from the event log (each instance reads it), and this bench
 * hands rows straight to A's hub (`deliverEvents`): it measures encoding and the fan-out to
 * sockets, not the log; in `redis` mode B's subscribers no longer receive A's rows this way.
 * Server and clients share this process (one clock); client work counts against the server, so
 * the figures are on the pessimistic side.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp } from "../server/app";
import { loadConfig } from "../server/config";
import { randomString } from "../server/lib/crypto";
import { signChannel } from "../server/realtime/protocol";
import { createServices } from "../server/services";

const mode = (process.argv[2] === "redis" ? "redis" : "one") as "one" | "redis";
const SUBSCRIBERS = Number(process.argv[3] ?? 1000);
const ROUNDS = Number(process.argv[4] ?? 200);
const KEY = "benchkey";
const SECRET = "bench-secret-0123456789";
const CHANNEL = "private-organization.1";

async function instance(env: Record<string, string>) {
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: "silent",
    PORT: "0",
    DATA_DIR: mkdtempSync(join(tmpdir(), "simhost-bench-")),
    PUSHER_APP_KEY: KEY,
    PUSHER_APP_SECRET: SECRET,
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
 * Client side, in its own process (`--clients <port> <n>`): subscribes n sockets, then prints
 * "ready" and, per round, "<seq> <epoch ms of the last receipt>".
 */
async function runClients(port: number, n: number) {
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
  const one = () =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/app/${KEY}?protocol=7`);
      ws.onerror = () => reject(new Error("socket error"));
      ws.onmessage = (e) => {
        const raw = String(e.data);
        if (raw.includes("pusher:connection_established")) {
          const socketId = JSON.parse(JSON.parse(raw).data).socket_id;
          ws.send(JSON.stringify({ event: "pusher:subscribe", data: { channel: CHANNEL, auth: signChannel(KEY, SECRET, socketId, CHANNEL) } }));
        } else if (raw.includes("subscription_succeeded")) {
          ws.onmessage = (m) => onFrame(String(m.data));
          resolve(ws);
        }
      };
    });
  for (let i = 0; i < n; i += 200) await Promise.all(Array.from({ length: Math.min(200, n - i) }, one));
  process.stdout.write("ready\n");
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** Server side: the instance(s), the client process, the rounds. */
async function runServer() {
  const redisEnv: Record<string, string> =
    mode === "redis" ? { REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", REDIS_PREFIX: `simhost-bench-${randomString(8)}:` } : {};
  const a = await instance(redisEnv);
  const b = mode === "redis" ? await instance(redisEnv) : a;

  const child = Bun.spawn([process.execPath, import.meta.path, "--clients", String(b.port), String(SUBSCRIBERS)], { stdout: "pipe", stderr: "inherit" });
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

  const message = { id: 0, hosted_sim_id: 1, number: "+15550000000", direction: "inbound", from: "+15551112222", text: "x".repeat(160), status: "received" };
  const latencies: number[] = [];
  const publishCalls: number[] = [];
  for (let r = 0; r < ROUNDS + 10; r++) {
    const t0 = epoch();
    // Straight to the hub, as the event tail hands it rows of the log (the database is not measured here).
    a.services.realtime.deliverEvents([
      {
        cursor: `evt_${r}`,
        position: { txid: "0", id: r },
        organizationId: 1,
        type: "message.received",
        hostedSimId: null,
        deviceId: null,
        teamId: null,
        payload: { seq: r, message: { ...message, id: r } },
        createdAt: new Date(),
      },
    ]);
    // With the in-process bus this is the whole server side: encoding once and writing to every socket.
    if (r >= 10) publishCalls.push(epoch() - t0);
    const [seq, at] = (await next()).split(" ");
    if (Number(seq) !== r) throw new Error(`expected round ${r}, got ${seq}`);
    if (r >= 10) latencies.push(Number(at) - t0); // the first rounds warm up the JIT
  }
  child.kill();

  latencies.sort((x, y) => x - y);
  const ms = (v: number) => Math.round(v * 100) / 100;
  console.log(
    JSON.stringify(
      {
        mode,
        subscribers: SUBSCRIBERS,
        rounds: ROUNDS,
        p50_ms: ms(percentile(latencies, 50)),
        p99_ms: ms(percentile(latencies, 99)),
        max_ms: ms(latencies[latencies.length - 1]!),
        publish_call_p50_ms: ms(
          percentile(
            publishCalls.sort((x, y) => x - y),
            50,
          ),
        ),
        publish_call_p99_ms: ms(percentile(publishCalls, 99)),
      },
      null,
      2,
    ),
  );
  for (const i of mode === "redis" ? [a, b] : [a]) {
    i.services.realtime.shutdown();
    await i.app.stop(true);
    await i.services.close();
  }
  process.exit(0);
}

if (process.argv[2] === "--clients") await runClients(Number(process.argv[3]), Number(process.argv[4]));
else await runServer();
