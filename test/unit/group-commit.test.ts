import { describe, expect, test } from "bun:test";
import { createGroupCommit } from "../../server/lib/group-commit";

/** A write that records its batches and answers each item doubled. */
function recorder() {
  const batches: number[][] = [];
  const write = async (items: number[]) => {
    batches.push(items);
    return items.map((i) => i * 2);
  };
  return { batches, write };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("group commit", () => {
  test("items of one tick share a batch; each caller gets its own result", async () => {
    const r = recorder();
    const gc = createGroupCommit(r.write);
    const results = await Promise.all([1, 2, 3, 4].map((i) => gc.submit(i)));
    expect(results).toEqual([2, 4, 6, 8]);
    expect(r.batches).toEqual([[1, 2, 3, 4]]);
  });

  test("with a linger, items of later ticks wait for one batch; submitLatest keeps one item per key", async () => {
    const r = recorder();
    const gc = createGroupCommit(r.write, { lingerMs: 60_000, maxInFlight: 1 });
    await gc.submit(1);
    const second = gc.submitLatest("a", 2);
    await tick();
    expect(gc.submitLatest("a", 3)).toBeNull();
    const fourth = gc.submit(4);
    await tick();
    // Within the linger nothing more is written.
    expect(r.batches).toEqual([[1]]);
    await gc.flush();
    expect(r.batches).toEqual([[1], [3, 4]]);
    expect(await second).toBe(6);
    expect(await fourth).toBe(8);
  });

  test("a full batch does not linger", async () => {
    const r = recorder();
    const gc = createGroupCommit(r.write, { lingerMs: 60_000, maxBatch: 3, maxInFlight: 1 });
    await gc.submit(0);
    const full = Promise.all([1, 2, 3].map((i) => gc.submit(i)));
    expect(await full).toEqual([2, 4, 6]);
    expect(r.batches).toEqual([[0], [1, 2, 3]]);
    // One short of a batch waits for the linger again.
    void gc.submit(4);
    await tick();
    expect(r.batches).toHaveLength(2);
    await gc.flush();
    expect(r.batches).toEqual([[0], [1, 2, 3], [4]]);
  });
});
