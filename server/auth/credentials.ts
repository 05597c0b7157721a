import { type ApiKeyRow, deleteApiKey, insertApiKey, replaceApiKeySecret, updateApiKey } from "../api-keys/store";
import type { Pool, Sql } from "../db/client";
import { unauthenticated } from "../errors";
import { type Clock, systemClock } from "../lib/clock";
import { sha256, sha256Base64 } from "../lib/crypto";
import type { Logger } from "../lib/logger";
import { bearerToken, type Caller, type Permission } from "./caller";
import { createCallerCache, type Invalidation, type Revocation } from "./caller-cache";
import { createCallerLookup } from "./lookup";
import { type BUS_TIMING, createRevocationBus } from "./revocation-bus";
import { createRevocationFeed, type FEED_TIMING } from "./revocation-feed";
import type { LoggedInvalidation } from "./revocation-log";
import { createRevoker, revokeEnded } from "./revoker";
import { deleteUserSessions, findLiveSession, type SessionChoice } from "./store";
import { API_KEY_PREFIX_LENGTH, newApiKey } from "./tokens";

export type Credentials = ReturnType<typeof createCredentials>;

export type CredentialOptions = {
  sql: Pool;
  sessionTtlDays: number;
  instanceId: string;
  logger: Logger;
  /** With Redis, instances acknowledge revocations to each other (revocation-bus.ts). */
  redis?: { url: string; prefix: string };
  cacheSeconds?: number;
  /** Wall time: cache entry lifetimes, last-use stamps. The revocation guarantees run on the monotonic clock. */
  clock?: Clock;
  timing?: { feed?: Partial<typeof FEED_TIMING>; bus?: Partial<typeof BUS_TIMING> };
};

/**
 * The credential module: resolves every kind of credential (session, OAuth access token, API
 * key) to a caller, caches it, and is the only way one is revoked. A revoking call resolves once
 * every instance has dropped the credential (revoker.ts), so no request sent after its answer
 * succeeds with it anywhere. The cache is used only while this instance is certain to see every
 * revocation: its read of the revocation log is fresh and, with Redis, it is registered so that
 * revokers wait for it (docs/architecture.md, Authentication).
 */
export function createCredentials(opts: CredentialOptions) {
  const clock = opts.clock ?? systemClock;
  const cache = createCallerCache({ ttlMs: (opts.cacheSeconds ?? 10) * 1000, max: 100_000, clock });
  const lookUp = createCallerLookup({ ...opts, clock });
  const listeners = new Set<(r: Revocation) => void>();

  /** Every instance runs this for every invalidation, its own and the others' (bus or log), once. */
  const applied = new Set<number>();
  function apply(i: LoggedInvalidation) {
    if (applied.has(i.id)) return;
    applied.add(i.id);
    if (applied.size > 10_000) for (const id of applied) if (id <= feed.watermark()) applied.delete(id);
    invalidate(i);
  }
  function invalidate(i: Invalidation) {
    cache.forget(i.revocation);
    if (!i.cacheOnly) for (const listener of listeners) listener(i.revocation);
  }

  const feed = createRevocationFeed({
    sql: opts.sql,
    apply,
    lost: () => invalidate({ revocation: { everything: true } }),
    logger: opts.logger,
    timing: opts.timing?.feed,
  });
  const bus = opts.redis
    ? createRevocationBus({
        ...opts.redis,
        instanceId: opts.instanceId,
        logger: opts.logger,
        apply,
        onRegistered: () => cache.forget({ everything: true }),
        timing: opts.timing?.bus,
      })
    : undefined;
  const revoker = createRevoker({ sql: opts.sql, bus, applyLocally: apply, waitForLog: false });

  /** True while every revocation reaches this instance before its revoker answers. */
  const cacheUsable = () => feed.fresh() && (!bus || bus.registered());
  /**
   * Resolves once every revocation committed before the call is applied here. At once where
   * revokers wait for this instance (registered on the bus) or wait out the log's bound (no bus);
   * an instance cut off from Redis reads the log first: a revoker there answered without it.
   */
  const revocationsCaughtUp = (): Promise<void> =>
    !bus || bus.registered() ? Promise.resolve() : feed.readNow().catch((e) => opts.logger.debug({ err: (e as Error).message }, "revocation log not read"));

  /** The caller a request's token stands for: at once from the cache, else a promise of the database's answer. */
  function resolve(request: Request): Caller | Promise<Caller> {
    const token = bearerToken(request.headers.get("authorization"));
    if (!token) throw unauthenticated();
    const orgHeader = request.headers.get("x-organization-id");
    // Hashed once: the digest is both the cache key and (on a miss) what the lookup compares.
    const digest = sha256Base64(token);
    // No header and an empty one are two keys: the lookup answers them differently (an empty one is 404).
    const key = orgHeader === null ? digest : `${digest}|${orgHeader}`;
    const usable = cacheUsable();
    const cached = usable ? cache.get(key) : undefined;
    if (cached) return cached;
    const since = cache.generation();
    return lookUp(token, Buffer.from(digest, "base64"), orgHeader).then(({ caller, expiresAt }) => {
      if (usable) cache.set(key, caller, since, expiresAt);
      return caller;
    });
  }

  /** Runs `listener` for every revocation seen on this instance (realtime ends the subscriptions it authorized). */
  function onRevoked(listener: (r: Revocation) => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  return {
    resolve,
    onRevoked,
    /** A revocation whose database change is committed already; resolves when every instance dropped it. */
    revoke: revoker.revoke,
    change: revoker.change,
    ...apiKeyOperations(revoker),
    /**
     * Ends some of a user's session and OAuth tokens (one, or all but one) on every instance
     * before it resolves; `alongside` runs in the same transaction (a password change).
     */
    endUserSessions: (userId: number, which: SessionChoice, alongside?: (tx: Sql) => Promise<void>) =>
      revoker.change(async (tx, record) => {
        await alongside?.(tx);
        const ended = await deleteUserSessions(tx, userId, which);
        revokeEnded(record, ended);
        return ended.sessionIds;
      }),
    /**
     * The session or OAuth token `token` is, unexpired, whatever its user's memberships: logout
     * needs nothing more (a user in no organization any more can still end theirs). Null when none.
     */
    sessionOf: (token: string) => findLiveSession(opts.sql, sha256(token)),
    cacheSize: cache.size,
    /** Whether this instance serves callers from its cache now (false: every request resolves against the database). */
    cacheInUse: cacheUsable,
    revocationsCaughtUp,
    /** Reads the log once (so the cache can be used) and joins the bus. */
    async start() {
      await feed.start();
      await bus?.ready();
    },
    async close() {
      feed.stop();
      await bus?.close();
    },
  };
}

function newSecret() {
  const key = newApiKey();
  return { key, prefix: key.slice(0, API_KEY_PREFIX_LENGTH), hash: sha256(key) };
}

/** API keys: created, changed and revoked here only; a changed or gone key stops everywhere before the call returns. */
function apiKeyOperations(revoker: ReturnType<typeof createRevoker>) {
  return {
    createApiKey: (k: { organizationId: number; name: string; permissions: Permission[]; createdBy: number | null }) =>
      revoker.change(async (tx) => {
        const secret = newSecret();
        return { row: await insertApiKey(tx, { ...k, prefix: secret.prefix, hash: secret.hash }), key: secret.key };
      }),
    /**
     * A change of the key's permissions ends what the key authorized (sockets too); a rename, or
     * the same permissions sent again (a client sending the whole object), only refreshes cached callers.
     */
    updateApiKey: (organizationId: number, id: number, changes: { name?: string; permissions?: Permission[] }) =>
      revoker.change(async (tx, record): Promise<ApiKeyRow | undefined> => {
        const updated = await updateApiKey(tx, organizationId, id, changes);
        if (!updated) return undefined;
        (updated.permissionsChanged ? record.revoke : record.refresh)({ apiKeyId: updated.row.id });
        return updated.row;
      }),
    deleteApiKey: (organizationId: number, id: number) =>
      revoker.change(async (tx, record) => {
        const deleted = await deleteApiKey(tx, organizationId, id);
        if (deleted) record.revoke({ apiKeyId: id });
        return deleted;
      }),
    regenerateApiKey: (organizationId: number, id: number) =>
      revoker.change(async (tx, record) => {
        const secret = newSecret();
        const row = await replaceApiKeySecret(tx, organizationId, id, secret);
        if (!row) return undefined;
        record.revoke({ apiKeyId: row.id });
        return { row, key: secret.key };
      }),
  };
}
