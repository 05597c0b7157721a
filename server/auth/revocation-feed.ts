import type { Pool } from "../db/client";
import type { Logger } from "../lib/logger";
import { type LoggedInvalidation, latestInvalidationId, pruneInvalidations, readInvalidationsAfter } from "./revocation-log";

/** How often an instance reads the revocation log, how old its last read may be for its cache to be used, how long rows are kept. */
export const FEED_TIMING = { pollMs: 150, freshMs: 500, keepSeconds: 600 };

/**
 * Reads the revocation log (server/auth/revocation-log.ts) every `pollMs` and applies what is
 * new. `fresh()` is the cache's licence: true while the last completed read began less than
 * `freshMs` ago. A read that began after a revocation committed has applied it, so a revoker
 * that waits `freshMs` (plus margin) after its commit knows every instance whose cache is in use
 * has dropped the credential. Durations use the monotonic clock: a jump of the wall clock (or a
 * test's fake clock) must neither stale nor extend the licence.
 */
export function createRevocationFeed(opts: {
  sql: Pool;
  apply: (i: LoggedInvalidation) => void;
  /** Runs when reads failed for longer than the log keeps rows: revocations may have been missed. */
  lost: () => void;
  logger: Logger;
  timing?: Partial<typeof FEED_TIMING>;
}) {
  const timing = { ...FEED_TIMING, ...opts.timing };
  let watermark: number | undefined;
  let readBegan = Number.NEGATIVE_INFINITY;
  let lastPrune = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  async function readOnce() {
    const began = performance.now();
    if (watermark === undefined) watermark = await latestInvalidationId(opts.sql);
    else if (Number.isFinite(readBegan) && began - readBegan > timing.keepSeconds * 1000) {
      watermark = await latestInvalidationId(opts.sql);
      opts.lost();
    }
    for (;;) {
      const batch = await readInvalidationsAfter(opts.sql, watermark);
      for (const i of batch) {
        opts.apply(i);
        watermark = i.id;
      }
      if (batch.length < 1000) break;
    }
    readBegan = began;
    if (began - lastPrune > 60_000) {
      lastPrune = began;
      await pruneInvalidations(opts.sql, timing.keepSeconds);
    }
  }

  /** Reads one after another: a read asked for begins after every earlier one has ended. */
  let chain: Promise<void> = Promise.resolve();
  function read(): Promise<void> {
    const next = chain.then(readOnce);
    chain = next.catch(() => {});
    return next;
  }

  async function loop() {
    if (stopped) return;
    try {
      await read();
    } catch (e) {
      opts.logger.debug({ err: (e as Error).message }, "revocation log not read");
    }
    if (!stopped) timer = setTimeout(loop, timing.pollMs);
  }

  return {
    /** Reads once (so the cache may be used at once), then keeps reading. */
    async start() {
      await read().catch((e) => opts.logger.warn({ err: (e as Error).message }, "revocation log not read"));
      timer = setTimeout(loop, timing.pollMs);
    },
    fresh: () => performance.now() - readBegan < timing.freshMs,
    /** A read that begins now (after any under way): what was committed to the log before the call is applied when it resolves. */
    readNow: read,
    /** Ids at or below this were applied by the feed. */
    watermark: () => watermark ?? 0,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
