import { isUniqueViolation, type Pool } from "../db/client";
import { notFound } from "../errors";
import { createGroupCommit } from "../lib/group-commit";
import { insertSmsBatch, type SmsSubmission } from "./sms-store";
import { assertAcceptsSms, type DeviceStatus } from "./transitions";

const DUPLICATES_SEEN_MS = 10_000;

type Refusal = DeviceStatus | null | undefined | { error: unknown };

/**
 * Durable SMS intake: concurrent submissions are written together (group commit), each caller
 * resolving once the batch holding its SMS has committed. Processing jobs are created in the
 * same statement, so an acknowledged SMS is always processed, even after a crash.
 */
export function createSmsIngest(deps: { sql: Pool; wake: () => void; maxBatch?: number }) {
  // Batches are inserted plainly, duplicates failing the statement, until one does; then, for
  // DUPLICATES_SEEN_MS, they skip duplicates from the start (a device retrying what it sent, or a
  // fleet catching up after an outage, sends many), so a burst of retries costs one statement per
  // batch, not two.
  let duplicatesSeenAt = Number.NEGATIVE_INFINITY;
  async function insert(items: SmsSubmission[]) {
    if (performance.now() - duplicatesSeenAt < DUPLICATES_SEEN_MS) return insertSmsBatch(deps.sql, items, { skipDuplicates: true });
    try {
      return await insertSmsBatch(deps.sql, items, { skipDuplicates: false });
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      duplicatesSeenAt = performance.now();
      return insertSmsBatch(deps.sql, items, { skipDuplicates: true });
    }
  }

  /**
   * Each submission's refusal: its device's status where that device may not submit, null where
   * there is no such device, undefined once stored, `{ error }` where its row could not be written.
   */
  async function write(items: SmsSubmission[]): Promise<Refusal[]> {
    let refused: { id: number; status: DeviceStatus | null }[];
    try {
      refused = await insert(items);
    } catch (e) {
      // One bad row must not fail its neighbours: each is written alone, and only its own caller gets its error.
      if (items.length === 1) return [{ error: e }];
      const alone = await Promise.all(items.map((i) => write([i])));
      return alone.map((r) => r[0]);
    }
    deps.wake();
    const status = new Map(refused.map((r) => [r.id, r.status]));
    return items.map((i) => status.get(i.deviceId));
  }

  const batcher = createGroupCommit(write, { maxBatch: deps.maxBatch ?? 1000, maxInFlight: 1 });

  return {
    /** Resolves once the SMS is durably stored (or was already); throws 404 for a device that does not exist, 409 for one that may not submit. */
    async submit(item: SmsSubmission) {
      const refusal = await batcher.submit(item);
      if (refusal === null) throw notFound("Device");
      if (typeof refusal === "object") throw refusal.error;
      if (refusal !== undefined) assertAcceptsSms(refusal);
    },
    flush: () => batcher.flush(),
  };
}

export type SmsIngest = ReturnType<typeof createSmsIngest>;
