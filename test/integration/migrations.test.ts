import { describe, expect, test } from "bun:test";
import { migrate, readMigrations } from "../../server/db/migrate";
import { openEmptyDatabase } from "../helpers";

describe("migrations", () => {
  test("apply in order on an empty database, and are a no-op the second time", async () => {
    const db = await openEmptyDatabase();
    try {
      const files = readMigrations();
      expect(files.map((m) => m.version)).toEqual([...files.map((m) => m.version)].sort((a, b) => a - b));
      expect(await migrate(db.sql)).toEqual(files.map((m) => m.name));
      const recorded = await db.sql<{ version: number }[]>`select version from schema_migrations order by version`;
      expect(recorded.map((r) => r.version)).toEqual(files.map((m) => m.version));
      expect(await migrate(db.sql)).toEqual([]);
      const [{ n }] = (await db.sql`select count(*)::int as n from plans`) as unknown as [{ n: number }];
      expect(n).toBe(3);
    } finally {
      await db.close();
    }
  }, 120_000);

  test("concurrent starts apply each migration once (advisory lock)", async () => {
    const db = await openEmptyDatabase();
    try {
      const results = await Promise.all([migrate(db.sql), migrate(db.sql), migrate(db.sql)]);
      expect(results.flat().sort()).toEqual(
        readMigrations()
          .map((m) => m.name)
          .sort(),
      );
    } finally {
      await db.close();
    }
  }, 120_000);

  test("a failing migration applies nothing of its run", async () => {
    const db = await openEmptyDatabase();
    try {
      const broken = [...readMigrations(), { version: 9999, name: "9999_broken", sql: "create table ok_then_fail (id int); select * from no_such_table;" }];
      // Not `expect(promise).rejects`: on the embedded database that took 25-40 s under load, the migration 1 s.
      const failure = await migrate(db.sql, broken).then(
        () => null,
        (e: unknown) => e,
      );
      expect((failure as Error | null)?.message).toContain("no_such_table");
      const [{ exists }] = (await db.sql`select to_regclass('schema_migrations') is not null as exists`) as unknown as [{ exists: boolean }];
      if (exists) expect((await db.sql`select version from schema_migrations`).length).toBe(0);
      expect(await migrate(db.sql)).toEqual(readMigrations().map((m) => m.name));
    } finally {
      await db.close();
    }
  }, 120_000);
});
