import { expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_LIMITS, openFileLimit } from "../../server/realtime/limits";

test("the open-file limit is read from the process's limits; the connection cap stays below it", () => {
  const dir = mkdtempSync(join(tmpdir(), "simhost-limits-"));
  const file = (text: string) => {
    const path = join(dir, `limits-${Math.random()}`);
    writeFileSync(path, text);
    return path;
  };
  const header = "Limit                     Soft Limit           Hard Limit           Units     \n";
  expect(openFileLimit(file(`${header}Max open files            20000                20000                files     \n`))).toBe(20_000);
  expect(openFileLimit(file(`${header}Max open files            unlimited            unlimited            files     \n`))).toBeNull();
  expect(openFileLimit(join(dir, "absent"))).toBeNull();
  const files = openFileLimit();
  if (files !== null) expect(DEFAULT_LIMITS.maxConnections).toBeLessThanOrEqual(Math.max(1_000, files - 2_000));
  expect(DEFAULT_LIMITS.maxConnectionsPerAddress).toBe(1_000);
});
