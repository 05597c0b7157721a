import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EmbeddedInUseError, startEmbeddedPostgres } from "../../server/db/embedded";

describe("embedded database lock", () => {
  test("a second open of the same folder is refused while the first is open, allowed after", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simhost-lock-"));
    const first = await startEmbeddedPostgres(dir);
    const sleeper = Bun.spawn(["sleep", "30"]);
    try {
      // Another live process holding the lock: refused.
      writeFileSync(join(dir, "simhost.pid"), String(sleeper.pid));
      await expect(startEmbeddedPostgres(dir)).rejects.toBeInstanceOf(EmbeddedInUseError);
      writeFileSync(join(dir, "simhost.pid"), String(process.pid));
    } finally {
      sleeper.kill();
      await first.stop();
    }
    // A lock left by a dead process is stale and taken over.
    writeFileSync(join(dir, "simhost.pid"), String(sleeper.pid));
    await sleeper.exited;
    const again = await startEmbeddedPostgres(dir);
    await again.stop();
  }, 60_000);
});
