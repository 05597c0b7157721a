/**
 * Processing device SMS into messages, alone: what one SMS costs the processor (this process's
 * JavaScript) and PostgreSQL (the backend it uses), without HTTP or intake beside it.
 *
 *   bun bench/sms-processing.ts [--sms 20000] [--rounds 3] [--devices 1000]
 *
 * A template database gets `devices` devices with verified SIMs and `sms` + 1,000 SMS stored by the
 * real intake, round-robin over the devices (their processing jobs removed). Each round copies it
 * and processes its SMS in this process on one connection, 1,000 (PROCESS_CHUNK) per transaction
 * as the job handler does: the first chunk warms the connection's statements up, the rest are
 * measured. Per SMS: wall time, this process's CPU, and the PostgreSQL backend's CPU (/proc).
 * The same-run baseline, after each round on the same connection: the same SMS read by id and
 * written as one minimal row each (a table of their columns, a primary key and nothing else), 1,000
 * per transaction: what one durable row per SMS costs this PostgreSQL, against which processing's
 * several (the message, its visibility and counts, its event, the SMS's link) are judged.
 * BENCH_DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test).
 */
import { openDatabase, type Pool } from "../server/db/client";
import { migrate } from "../server/db/migrate";
import { createSmsIngest } from "../server/devices/sms-ingest";
import { PROCESS_CHUNK, processDeviceSms } from "../server/devices/sms-process";
import { arg, cpuSeconds, dropDatabase, freshBenchDatabase, seedDevices, submitToIntake } from "./devices-load";

const SMS = arg("sms", 20000);
const ROUNDS = arg("rounds", 3);
const DEVICES = arg("devices", 1000);

// The template stays untouched to be copied, and a round's measurement undisturbed: no autovacuum stand-in.
const templateUrl = await freshBenchDatabase("processing", { autovacuum: false });

/** The baseline: `ids`' SMS read by id and copied as minimal rows, PROCESS_CHUNK per transaction; wall and backend CPU µs per row. */
async function minimalRows(sql: Pool, pid: number, ids: number[]) {
  await sql`create table bench_minimal_rows (id bigint generated always as identity primary key, device_id bigint not null,
    from_number text not null, body text not null, received_at timestamptz not null)`;
  const pg0 = await cpuSeconds(pid);
  const t0 = performance.now();
  for (let k = 0; k < ids.length; k += PROCESS_CHUNK)
    await sql.begin(
      (tx) => tx`insert into bench_minimal_rows (device_id, from_number, body, received_at)
        select device_id, from_number, body, received_at from device_sms where id = any(${ids.slice(k, k + PROCESS_CHUNK)}::bigint[])`,
    );
  const wallUs = (performance.now() - t0) * 1000;
  const pgUs = ((await cpuSeconds(pid)) - pg0) * 1e6;
  return { wallUsPerRow: +(wallUs / ids.length).toFixed(1), postgresCpuUsPerRow: +(pgUs / ids.length).toFixed(1) };
}

const rounds = [];
try {
  {
    const db = await openDatabase({ DATABASE_URL: templateUrl, DATA_DIR: "/tmp" });
    await migrate(db.sql);
    const { deviceIds } = await seedDevices(db.sql as never, DEVICES);
    const ingest = createSmsIngest({ sql: db.sql, wake: () => {} });
    await submitToIntake(ingest, deviceIds, {
      concurrency: 500,
      more: (n) => n < SMS + PROCESS_CHUNK,
      body: (i) => `Your code is ${100000 + (i % 900000)}. bench message ${i} ${crypto.randomUUID()}`,
    });
    await db.sql`delete from jobs`;
    await db.sql`vacuum analyze`;
    await db.close();
  }
  for (let round = 0; round < ROUNDS; round++) {
    const url = await freshBenchDatabase("processing_round", { template: templateUrl, autovacuum: false });
    const db = await openDatabase({ DATABASE_URL: url, DATA_DIR: "/tmp" }, 1);
    try {
      const ids = (await db.sql<{ id: number }[]>`select id from device_sms where message_row_id is null order by id`).map((r) => r.id);
      const [{ pid }] = (await db.sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      await processDeviceSms(db.sql, [{ ids: ids.slice(0, PROCESS_CHUNK) }]);
      const rest = ids.slice(PROCESS_CHUNK);
      const js0 = process.cpuUsage();
      const pg0 = await cpuSeconds(pid);
      const t0 = performance.now();
      let processed = 0;
      for (let k = 0; k < rest.length; k += PROCESS_CHUNK) processed += await processDeviceSms(db.sql, [{ ids: rest.slice(k, k + PROCESS_CHUNK) }]);
      const wallUs = (performance.now() - t0) * 1000;
      const js = process.cpuUsage(js0);
      const pgUs = ((await cpuSeconds(pid)) - pg0) * 1e6;
      const per = (us: number) => +(us / processed).toFixed(1);
      const baseline = await minimalRows(db.sql, pid, rest);
      rounds.push({ processed, wallUsPerSms: per(wallUs), serverCpuUsPerSms: per(js.user + js.system), postgresCpuUsPerSms: per(pgUs), baseline });
    } finally {
      await db.close();
      await dropDatabase(url);
    }
  }
} finally {
  await dropDatabase(templateUrl);
}
console.log(JSON.stringify({ sms: SMS, devices: DEVICES, chunk: PROCESS_CHUNK, rounds }, null, 2));
