import type { Pool, Sql } from "../db/client";
import type { Invalidation, Revocation } from "./caller-cache";
import { FEED_TIMING } from "./revocation-feed";
import { appendInvalidations, type LoggedInvalidation } from "./revocation-log";
import type { EndedTokens } from "./store";

type Bus = { announce(list: LoggedInvalidation[], deadline: number): Promise<number | false> };

/** How long after its commit a revoker waits at most: past the feed's freshness bound, every instance using its cache has read the log. */
export const REVOKE_WAIT_MS = FEED_TIMING.freshMs + 150;

/** What a change's function records: revocations (listeners run) or cache-only invalidations (role, plan). */
export type Recorder = { revoke(r: Revocation): void; refresh(r: Revocation): void };

/** Records the revocation of every token a change ended: each session or access token, and each OAuth grant as a whole. */
export function revokeEnded(record: Recorder, ended: EndedTokens) {
  for (const sessionId of ended.sessionIds) record.revoke({ sessionId });
  for (const grantId of ended.grantIds) record.revoke({ grantId });
}

export type Revoker = ReturnType<typeof createRevoker>;

/**
 * The one way a credential stops working (or a cached caller changes): `change` runs the
 * database change and appends what it revoked to the revocation log in the same transaction;
 * after the commit the revocations are applied here, announced to the other instances, and
 * `change` resolves only when every instance has dropped them:
 * - `bus` (Redis): every registered instance acknowledged; otherwise
 * - REVOKE_WAIT_MS after the commit, when every instance still using its cache has read the log
 *   (revocation-feed.ts). A single server without Redis has nobody to wait for; a tool
 *   (`waitForLog`: the CLI) that heard no acknowledgement at all cannot tell "no server runs" from
 *   "no server listens on this REDIS_PREFIX", so it waits.
 */
export function createRevoker(opts: { sql: Pool; bus?: Bus; applyLocally?: (i: LoggedInvalidation) => void; waitForLog: boolean; waitMs?: number }) {
  const waitMs = opts.waitMs ?? REVOKE_WAIT_MS;

  async function announce(logged: LoggedInvalidation[], committedAt: number) {
    for (const i of logged) opts.applyLocally?.(i);
    const deadline = committedAt + waitMs;
    const acknowledged = opts.bus ? await opts.bus.announce(logged, deadline) : false;
    if (acknowledged !== false && (acknowledged > 0 || !opts.waitForLog)) return;
    if (!opts.bus && !opts.waitForLog) return;
    const left = deadline - performance.now();
    if (left > 0) await Bun.sleep(left);
  }

  /**
   * Runs `fn` in a transaction; what it records is logged in that transaction and announced
   * after the commit, also when `fn` returns (rather than throws) a failure.
   */
  async function change<T>(fn: (tx: Sql, record: Recorder) => Promise<T>): Promise<T> {
    const list: Invalidation[] = [];
    const record: Recorder = { revoke: (revocation) => list.push({ revocation }), refresh: (revocation) => list.push({ revocation, cacheOnly: true }) };
    const { result, ids } = await opts.sql.begin(async (tx) => {
      const result = await fn(tx, record);
      return { result, ids: await appendInvalidations(tx, list) };
    });
    if (ids.length > 0) {
      await announce(
        list.map((i, n) => ({ ...i, id: ids[n]! })),
        performance.now(),
      );
    }
    return result as T;
  }

  /** A revocation whose database change is already committed (or that has none). */
  const revoke = (r: Revocation) => change(async (_tx, record) => record.revoke(r));

  return { change, revoke };
}
