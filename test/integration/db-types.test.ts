import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Database } from "../../server/db/client";
import { openEmptyDatabase } from "../helpers";

// The driver's types for int8 and bigint[] are our own (server/db/client.ts): they must read and
// write every value the generic code did.
describe("database types", () => {
  let db: Database;
  beforeAll(async () => {
    db = await openEmptyDatabase();
  }, 60_000);
  afterAll(() => db?.close());

  test("bigint[] parameters round-trip, with negatives, nulls, the largest safe integer and none", async () => {
    const values = [1, -2, null, 0, 9007199254740991, -9007199254740991];
    const [row] = await db.sql<{ xs: (number | null)[]; empty: number[]; n: number; nulls: number }[]>`
      select ${values}::bigint[] as xs, ${[]}::bigint[] as empty,
        cardinality(${values}::bigint[])::int as n, (select count(*)::int from unnest(${values}::bigint[]) x where x is null) as nulls`;
    expect(row!.xs).toEqual(values);
    expect(row!.empty).toEqual([]);
    expect(row!.n).toBe(6);
    expect(row!.nulls).toBe(1);
  });

  test("bigint[] works as a key list and reads back from expressions, also nested", async () => {
    const ids = Array.from({ length: 1000 }, (_, i) => i * 7);
    const [row] = await db.sql<{ hits: number; built: number[]; nested: number[][] }[]>`
      select (select count(*)::int from generate_series(0, 10000) g where g = any(${ids}::bigint[])) as hits,
        array[3, -4]::bigint[] as built, array[[1, 2], [3, 4]]::bigint[] as nested`;
    expect(row!.hits).toBe(1000);
    expect(row!.built).toEqual([3, -4]);
    expect(row!.nested).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });
});
