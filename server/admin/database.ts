import { existsSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { createRevocationBus } from "../auth/revocation-bus";
import { createRevoker } from "../auth/revoker";
import { embeddedDir, isDatabaseUnavailable, openDatabase, type Pool } from "../db/client";
import { migrate } from "../db/migrate";
import { createLogger } from "../lib/logger";
import { type Admin, AdminError, createAdmin } from "./operations";

type AdminDatabase = { sql: Pool; close(): Promise<void>; serverMayRun: boolean };

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
    return { sql, close: () => sql.end({ timeout: 5 }), serverMayRun: true };
  } catch (e) {
    await sql.end({ timeout: 0 }).catch(() => {});
    if (isDatabaseUnavailable(e)) return null; // a stale socket file: the server is gone
    throw e;
  }
}

/** The settings of API.md §4 an operator's command needs, read as the server reads them. */
export type AdminEnv = Record<string, string | undefined> & { DATABASE_URL?: string; DATA_DIR?: string; REDIS_URL?: string; REDIS_PREFIX?: string };

/**
 * DATABASE_URL if set; else the embedded database under DATA_DIR, through the running server's
 * socket when there is one (PGlite must never be opened by two processes), otherwise opened here.
 */
async function openAdminDatabase(env: AdminEnv): Promise<AdminDatabase> {
  const config = { DATABASE_URL: env.DATABASE_URL || undefined, DATA_DIR: env.DATA_DIR || "./.data" };
  if (config.DATABASE_URL && !/^postgres(ql)?:\/\//.test(config.DATABASE_URL))
    throw new AdminError("invalid configuration: DATABASE_URL must start with postgres://");
  try {
    if (config.DATABASE_URL) return { ...(await openDatabase(config, 1)), serverMayRun: true };
    const running = await connectToRunningServer(embeddedDir(config.DATA_DIR));
    return running ?? { ...(await openDatabase(config, 1)), serverMayRun: false };
  } catch (e) {
    if (isDatabaseUnavailable(e)) throw new AdminError(`Could not connect to the database (${(e as { code?: string }).code}).`);
    throw e;
  }
}

/**
 * Runs `fn` with the admin operations on the migrated database, then closes it. Revocations
 * reach running servers before `fn`'s operation returns: acknowledged over Redis when REDIS_URL
 * is set, else by waiting out the bound in which every server reads the revocation log (only
 * when a server may be running: DATABASE_URL, or the embedded database served by one).
 */
export async function withAdmin<T>(fn: (admin: Admin) => Promise<T>, env: AdminEnv): Promise<T> {
  if (env.REDIS_URL && !/^rediss?:\/\//.test(env.REDIS_URL)) throw new AdminError("invalid configuration: REDIS_URL must start with redis://");
  const db = await openAdminDatabase(env);
  const bus = env.REDIS_URL
    ? createRevocationBus({
        url: env.REDIS_URL,
        prefix: env.REDIS_PREFIX || "simhost:",
        instanceId: `cli-${process.pid}-${crypto.randomUUID().slice(0, 8)}`,
        logger: createLogger("silent"),
      })
    : undefined;
  try {
    await Promise.all([migrate(db.sql), bus?.ready(1000)]);
    const revoker = createRevoker({ sql: db.sql, bus, waitForLog: db.serverMayRun });
    return await fn(createAdmin({ sql: db.sql, change: revoker.change }));
  } finally {
    await bus?.close();
    await db.close();
  }
}
