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
 * Client side, in its own process (`--clients <port> <n> <token> <channel>`): subscribes n sockets, then prints
 * "ready" and, per round, "<seq> <epoch ms of the last receipt>".
 */
async function runClients(port: number, n: number, token: string, channel: string) {
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
    const ws = await subscribeOne(port, KEY, token, channel);
    ws.onmessage = (m) => onFrame(String(m.data));
  };
  for (let i = 0; i < n; i += 200) await Promise.all(Array.from({ length: Math.min(200, n - i) }, one));
  process.stdout.write("ready\n");
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** Server side: the instance(s), the client process, the rounds. */
async function runServer() {
  const redisEnv: Record<string, string> =
    mode === "redis" ? { REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", REDIS_PREFIX: `simhost-bench-${randomString(8)}:` } : {};
  const databaseUrl = mode === "redis" ? await freshBenchDatabase("broadcast") : null;
  const dbEnv: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
  const a = await instance({ ...redisEnv, ...dbEnv });
  const b = mode === "redis" ? await instance({ ...redisEnv, ...dbEnv }) : a;
  const { token, organizations } = await seedChannels(b.services.sql);
  const organizationId = organizations[0]!;

  const child = Bun.spawn(
    [process.execPath, import.meta.path, "--clients", String(b.port), String(SUBSCRIBERS), token, `private-organization.${organizationId}`],
    { stdout: "pipe", stderr: "inherit" },
  );
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
    const payload = { seq: r, message: { ...message, id: r } };
    if (mode === "one") {
      // Straight to the hub, as the event tail hands it rows of the log (the database is not measured here).
      a.services.realtime.deliverEvents([
        {
          cursor: `evt_${r}`,
          position: { txid: "0", id: r },
          organizationId,
          type: "message.received",
          hostedSimId: null,
          deviceId: null,
          teamId: null,
          payload,
          createdAt: new Date(),
        },
      ]);
    } else {
      // As a change on A does it: append in a transaction, then wake every instance's tail.
      await a.services.sql.begin((tx) => appendEvents(tx, [{ organizationId, type: "message.received", payload }]));
      a.services.events.notify();
    }
    // `one`: the whole server side, encoding once and writing to every socket; `redis`: the append and its commit.
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
  if (databaseUrl) await dropDatabase(databaseUrl);
  process.exit(0);
}

if (process.argv[2] === "--clients") await runClients(Number(process.argv[3]), Number(process.argv[4]), process.argv[5]!, process.argv[6]!);
else await runServer();
