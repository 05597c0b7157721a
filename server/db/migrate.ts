import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Pool } from "./client";

const MIGRATIONS_DIR = join(import.meta.dir, "../../migrations");
const LOCK_KEY = 7_220_431; // advisory lock shared by every process that migrates

export type Migration = { version: number; name: string; sql: string };

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f.replace(/\.sql$/, ""), sql: readFileSync(join(dir, f), "utf8") }));
}

/** Applies forward-only migrations in order, each in its own transaction, under an advisory lock. Returns the names applied. */
export async function migrate(sql: Pool, migrations = readMigrations()): Promise<string[]> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
    await tx`create table if not exists schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())`;
    const done = new Set((await tx<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.name);
    }
    return applied;
  });
}
