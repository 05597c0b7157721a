import { join, resolve } from "node:path";
import postgres from "postgres";
import type { Config } from "../config";
import { startEmbeddedPostgres } from "./embedded";

/** The connection pool (can begin transactions). */
export type Pool = postgres.Sql;
/** Anything that runs queries: the pool or a transaction. Store functions take this. */
export type Sql = postgres.Sql | postgres.TransactionSql;
export type Database = {
  sql: Pool;
  kind: "postgres" | "embedded";
  /**
   * Vacuums `tables` where nothing else does: the embedded database has no autovacuum, so rows
   * deleted there (finished jobs, expired records) would never leave their tables and indexes.
   * PostgreSQL's autovacuum does it there: a no-op. Table names are the server's own.
   */
  vacuum(tables: readonly string[]): Promise<void>;
  /**
   * Opens every connection of the pool now (one query on each), for a server about to listen:
   * otherwise the first requests open them under load, each a backend to start while SMS wait
   * behind it (docs/benchmarks.md "A server's first seconds").
   */
  warm(): Promise<void>;
  close(): Promise<void>;
};

/** `max` queries at once: the driver opens a connection for each while none is idle. */
const openAll = async (sql: Pool, max: number) => {
  await Promise.all(Array.from({ length: max }, () => sql`select 1`));
};

const common = {
  onnotice: () => {},
  transform: { undefined: null },
  connect_timeout: 5,
  // No idle timeout: the pool opened at start (`warm`) stays open through quiet minutes, so a burst
  // after one finds its backends started instead of opening them under the burst (docs/benchmarks.md
  // "A server's first seconds"); under load every connection is open anyway. max_lifetime (the
  // driver's 30-60 min) still replaces each one in time.
  // Reconnect within a second while the database is away. The driver's default backoff grows to
  // 10-20 s after a few refused connects, and queries queue behind it: requests would hang that
  // long instead of answering 503, and recovery would lag the database's return as much.
  backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
  // int8 (ids, counts) as JS numbers: safe up to 2^53, far past any count we keep.
  types: {
    int8: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    // bigint[] (id lists, `= any($1::bigint[])`, `unnest`), written and read whole: the driver's
    // generic array code quotes and escapes each element with two regular expressions, about
    // 1.8 µs an element, which made a 1,000-SMS processing chunk's id lists cost more than its
    // code extraction (docs/benchmarks.md). Digits, signs, commas, braces and NULL only.
    int8Array: {
      to: 1016,
      from: [1016],
      serialize: (xs: (number | null)[]) => `{${xs.map((x) => (x === null || x === undefined ? "NULL" : String(x))).join(",")}}`,
      parse: (x: string) => JSON.parse(x.replaceAll("{", "[").replaceAll("}", "]").replaceAll("NULL", "null")) as (number | null)[],
    },
  },
};

/** Where the embedded database lives for a data dir; admin commands use the same rule. */
export const embeddedDir = (dataDir: string) => resolve(join(dataDir, "pg"));

/**
 * postgres.js against DATABASE_URL, or against the embedded PGlite served on a Unix socket
 * under DATA_DIR. One driver and one SQL dialect either way.
 */
export async function openDatabase(config: Pick<Config, "DATABASE_URL" | "DATA_DIR">, max = 20): Promise<Database> {
  if (config.DATABASE_URL) {
    // No JIT: its threshold is a cost estimate, and a short statement over a table whose
    // statistics are not gathered yet (a bulk import, a new deployment) can be estimated past it
    // and compiled for 200 ms before running in 2 (the heartbeat writer, docs/benchmarks.md).
    // Nothing this server runs is long enough to gain from it.
    const sql = postgres(config.DATABASE_URL, { ...common, max, connection: { jit: "off" } });
    return { sql, kind: "postgres", vacuum: async () => {}, warm: () => openAll(sql, max), close: () => sql.end({ timeout: 5 }) };
  }
  const embedded = await startEmbeddedPostgres(embeddedDir(config.DATA_DIR));
  const embeddedMax = 4;
  const sql = postgres({ ...common, host: embedded.socketDir, port: embedded.port, user: "postgres", database: "postgres", max: embeddedMax, prepare: false });
  return {
    sql,
    kind: "embedded",
    warm: () => openAll(sql, embeddedMax),
    async vacuum(tables) {
      // One table a statement: PGlite has one session, and each vacuum holds it while it runs.
      for (const table of tables) await sql.unsafe(`vacuum "${table.replaceAll('"', '""')}"`);
    },
    async close() {
      await sql.end({ timeout: 5 });
      await embedded.stop();
    },
  };
}

const unavailableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "ENOENT",
  "EPIPE",
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

/** True when an error means the database could not be reached (answered as 503 `unavailable`). */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return typeof code === "string" && unavailableCodes.has(code);
}

/** A deadlock or serialization failure: the statement lost a race and may simply be run again. */
export function isTransientConflict(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === "40P01" || code === "40001";
}

/** An error of PostgreSQL's `code`, optionally of one named constraint or index. */
const violation =
  (code: string) =>
  (e: unknown, constraint?: string): boolean => {
    const err = e as { code?: string; constraint_name?: string } | null;
    return err?.code === code && (!constraint || err.constraint_name === constraint);
  };

/** A unique violation (optionally of one named constraint or index). */
export const isUniqueViolation = violation("23505");

/**
 * A foreign-key violation, optionally of one named constraint: the row an insert names was
 * deleted between the caller's check and its insert (a team deleted while a claim named it).
 */
export const isForeignKeyViolation = violation("23503");
