import { existsSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { embeddedDir, isDatabaseUnavailable, openDatabase, type Pool } from "../server/db/client";
import { migrate } from "../server/db/migrate";
import { CliError } from "./output";

type AdminDatabase = { sql: Pool; close(): Promise<void> };

// Same int8 handling as the server (ids and counts as JS numbers).
const int8 = { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) };

/** The embedded database of a running server: its Unix socket, or null when nobody answers there. */
async function connectToRunningServer(dir: string): Promise<AdminDatabase | null> {
  if (!existsSync(join(dir, ".s.PGSQL.5432"))) return null;
  const sql = postgres({
    host: dir,
    port: 5432,
    user: "postgres",
    database: "postgres",
    prepare: false,
    max: 1,
    connect_timeout: 5,
    onnotice: () => {},
    transform: { undefined: null },
    types: { int8 },
  });
  try {
    await sql`select 1`;
    return { sql, close: () => sql.end({ timeout: 5 }) };
  } catch (e) {
    await sql.end({ timeout: 0 }).catch(() => {});
    if (isDatabaseUnavailable(e)) return null; // a stale socket file: the server is gone
    throw e;
  }
}

/**
 * DATABASE_URL if set; else the embedded database under DATA_DIR, through the running server's
 * socket when there is one (PGlite must never be opened by two processes), otherwise opened here.
 */
async function openAdminDatabase(env: Record<string, string | undefined>): Promise<AdminDatabase> {
  // The two settings of API.md §4 an admin command needs, read as the server reads them.
  const config = { DATABASE_URL: env.DATABASE_URL || undefined, DATA_DIR: env.DATA_DIR || "./.data" };
  if (config.DATABASE_URL && !/^postgres(ql)?:\/\//.test(config.DATABASE_URL))
    throw new CliError("invalid configuration: DATABASE_URL must start with postgres://");
  try {
    if (config.DATABASE_URL) return await openDatabase(config, 1);
    return (await connectToRunningServer(embeddedDir(config.DATA_DIR))) ?? (await openDatabase(config, 1));
  } catch (e) {
    if (isDatabaseUnavailable(e)) throw new CliError(`Could not connect to the database (${(e as { code?: string }).code}).`);
    throw e;
  }
}

/** Runs `fn` on the migrated database and closes it afterwards. */
export async function withAdminDb<T>(fn: (sql: Pool) => Promise<T>, env: Record<string, string | undefined> = process.env): Promise<T> {
  const db = await openAdminDatabase(env);
  try {
    await migrate(db.sql);
    return await fn(db.sql);
  } finally {
    await db.close();
  }
}
