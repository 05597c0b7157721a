/**
 * Events appended per second on the SMS ingest path (issue 16): devices submit SMS over HTTP to
 * the real server with real PostgreSQL (closed loop, as fast as it goes), and the server's own
 * workers turn them into messages and append their `message.received` events to the log. Printed
 * beside the same run's ingest figure without events: the same closed loop against an API-only
 * server (WORKERS=0: acknowledged and stored, nothing processed, so no event appended), with the
 * load average before and after each phase and the server's CPU per acknowledged SMS.
 *
 *   bun bench/events-ingest.ts [--devices 1000] [--seconds 10] [--concurrency 256] [--drain 60]
 *
 * "appended during the loop" counts the events whose transaction started in the loop's window
 * (the log's `created_at`, the database's clock); "appended until caught up" also counts those
 * the workers appended after it, until every acknowledged SMS of the run had its event (or
 * `--drain` seconds passed), over the time that took.
 *
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test).
 */
import { loadavg } from "node:os";
import { arg, closedLoop, connect, dropDatabase, freshBenchDatabase, seedDevices, smsLoad, spawnServer } from "./devices-load";

const DEVICES = arg("devices", 1000);
const SECONDS = arg("seconds", 10);
const CONCURRENCY = arg("concurrency", 256);
const DRAIN_SECONDS = arg("drain", 60);

const load = () => +loadavg()[0]!.toFixed(2);

/** One phase: a fresh database and server (`workers` job workers), a warm-up, then the measured closed loop. */
async function phase(workers: number): Promise<Record<string, unknown>> {
  const dbUrl = await freshBenchDatabase(`events_ingest_w${workers}`);
  const server = await spawnServer("server/main.ts", { DATABASE_URL: dbUrl, WORKERS: String(workers) }, "/api/health");
  const sql = connect(dbUrl);
  try {
    const { token, deviceIds } = await seedDevices(sql, DEVICES);
    const req = smsLoad(server.url, token, deviceIds);
    await closedLoop(req, { concurrency: 64, seconds: 2 });
    const loadBefore = load();
    const count = async () => {
      const [r] = await sql<{ events: number; sms: number; at: Date }[]>`
        select (select count(*) from events where type = 'message.received')::int as events,
               (select count(*) from device_sms)::int as sms, clock_timestamp() as at`;
      return r!;
    };
    const before = await count();
    const loop = await closedLoop(req, { concurrency: CONCURRENCY, seconds: SECONDS, serverPid: server.proc.pid });
    const after = await count();
    const acknowledged = loop.statuses[202] ?? 0;
    const result: Record<string, unknown> = {
      workers,
      acknowledged_per_second: Math.round(acknowledged / loop.seconds),
      acknowledged,
      p99_ms: loop.p99,
      errors: loop.errors,
      server_cpu_us_per_sms: loop.cpuUsPerRequest,
    };
    if (workers > 0) {
      const [during] = await sql<{ n: number }[]>`
        select count(*)::int as n from events where type = 'message.received' and created_at >= ${before.at} and created_at < ${after.at}`;
      // Until every SMS stored in the run has its event (one organization: one event per message).
      const target = after.sms;
      const deadline = performance.now() + DRAIN_SECONDS * 1000;
      let now = after;
      while (now.events < target && performance.now() < deadline) {
        await Bun.sleep(100);
        now = await count();
      }
      const caughtUpSeconds = (now.at.getTime() - before.at.getTime()) / 1000;
      Object.assign(result, {
        events_appended_during_loop_per_second: Math.round(during!.n / loop.seconds),
        events_appended_until_caught_up_per_second: Math.round((now.events - before.events) / caughtUpSeconds),
        caught_up: now.events >= target,
        caught_up_after_loop_seconds: +((now.at.getTime() - after.at.getTime()) / 1000).toFixed(1),
        events_total: now.events,
        sms_stored: target,
      });
    }
    return { ...result, loadavg_before: loadBefore, loadavg_after: load() };
  } finally {
    await sql.end();
    server.proc.kill();
    await server.proc.exited;
    await dropDatabase(dbUrl);
  }
}

const withoutEvents = await phase(0);
const withEvents = await phase(4);
const events = withEvents.events_appended_during_loop_per_second as number;
console.log(
  JSON.stringify(
    {
      devices: DEVICES,
      concurrency: CONCURRENCY,
      seconds: SECONDS,
      baseline: withoutEvents,
      with_events: withEvents,
      // Events per second against the ingest figure without events, both from this run.
      ratio_events_to_ingest_without_events: +(events / (withoutEvents.acknowledged_per_second as number)).toFixed(2),
    },
    null,
    2,
  ),
);
