import Redis from "ioredis";
import type { Logger } from "../lib/logger";
import type { LoggedInvalidation } from "./revocation-log";

/** Registration lifetime and refresh period of an instance in the registry, in ms. */
export const BUS_TIMING = { ttlMs: 3000, refreshMs: 1000, commandMs: 500 };

// Times come from Redis (TIME), so instances' clocks never need to agree.
const REGISTER = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local added = redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], 60000)
return added`;
// Publishing and reading the registry in one step: an instance listed here was registered when the message went out.
const ANNOUNCE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('PUBLISH', KEYS[2], ARGV[1])
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')`;

type Announcement = { from: string; ref: string; list: LoggedInvalidation[] };

/**
 * The fast path of revocations between instances (Redis). Serving instances register with a
 * lifetime and refresh it while subscribed; a revoker publishes and waits for an acknowledgement
 * from every instance registered at that moment. An instance acknowledges only after applying.
 * Correctness does not rest on this path (the revocation log does, see revocation-feed.ts): it
 * lets a revoker answer as soon as every instance confirmed, instead of after the log's bound.
 */
export function createRevocationBus(opts: {
  url: string;
  prefix: string;
  instanceId: string;
  logger: Logger;
  /** Applies what another instance announced; absent for a tool (the CLI) that only announces. */
  apply?: (i: LoggedInvalidation) => void;
  /** Runs when this instance becomes registered after not being so: its cache must start empty. */
  onRegistered?: () => void;
  timing?: Partial<typeof BUS_TIMING>;
}) {
  const timing = { ...BUS_TIMING, ...opts.timing };
  const registry = `${opts.prefix}auth:instances`;
  const channel = `${opts.prefix}auth:revocations`;
  const ackChannel = (id: string) => `${opts.prefix}auth:acks:${id}`;
  const connect = () =>
    new Redis(opts.url, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      commandTimeout: timing.commandMs,
      retryStrategy: (n) => Math.min(n * 200, 2000),
    });
  const cmd = connect();
  const sub = connect();
  const silence = (e: Error) => opts.logger.debug({ err: e.message }, "revocation bus: redis error");
  cmd.on("error", silence);
  sub.on("error", silence);

  // Registration: `validUntil` is a lower bound of when the registry entry expires (it was written after we sent it).
  let validUntil = Number.NEGATIVE_INFINITY;
  let refresher: ReturnType<typeof setInterval> | undefined;
  let subscribed = false;
  let subscribedOnce: () => void = () => {};
  const firstSubscription = new Promise<void>((resolve) => (subscribedOnce = resolve));
  const acks = new Map<string, Set<string>>();
  const waiters = new Map<string, () => void>();

  sub.on("ready", () => {
    const channels = opts.apply ? [channel, ackChannel(opts.instanceId)] : [ackChannel(opts.instanceId)];
    sub.subscribe(...channels).then(() => {
      subscribed = true;
      subscribedOnce();
      // Registered again at once, not at the next tick: until then the cache stays unused.
      if (refresher) void refresh();
    }, silence);
  });
  // Not subscribed, announcements pass this instance by: it stops counting as registered (and so
  // stops using its cache) at once, not when its registry entry would have expired. A Redis
  // restart dropped the subscription and the registry together, and a revoker that found no
  // instance registered answered while this one still served the revoked credential from its cache.
  sub.on("close", () => {
    subscribed = false;
    validUntil = Number.NEGATIVE_INFINITY;
  });
  sub.on("message", (ch: string, raw: string) => {
    try {
      if (ch === channel) return received(JSON.parse(raw) as Announcement);
      const ack = JSON.parse(raw) as { ref: string; by: string };
      acks.get(ack.ref)?.add(ack.by);
      waiters.get(ack.ref)?.();
    } catch {
      opts.logger.warn("revocation bus: dropped a malformed message");
    }
  });

  function received(a: Announcement) {
    if (a.from === opts.instanceId || !opts.apply) return;
    for (const i of a.list) opts.apply(i);
    cmd.publish(ackChannel(a.from), JSON.stringify({ ref: a.ref, by: opts.instanceId })).catch(silence);
  }

  async function refresh() {
    if (!subscribed) return;
    const sent = performance.now();
    let added: unknown;
    try {
      added = await cmd.eval(REGISTER, 1, registry, opts.instanceId, timing.ttlMs);
    } catch (e) {
      return silence(e as Error);
    }
    // A gap in registration: announcements of that time did not wait for us, so what we cached is
    // suspect. So is an entry that was gone (the registry lost, a Redis that keeps nothing).
    if (!subscribed) return;
    if (performance.now() >= validUntil || added === 1) opts.onRegistered?.();
    validUntil = sent + timing.ttlMs - 100;
  }

  /**
   * Publishes and waits until every registered instance acknowledged, or `deadline`
   * (performance.now() ms). How many acknowledged, or false when some did not (or Redis failed).
   */
  async function announce(list: LoggedInvalidation[], deadline: number): Promise<number | false> {
    const ref = crypto.randomUUID();
    const got = new Set<string>();
    acks.set(ref, got);
    try {
      const message = JSON.stringify({ from: opts.instanceId, ref, list } satisfies Announcement);
      const peers = ((await cmd.eval(ANNOUNCE, 2, registry, channel, message)) as string[]).filter((p) => p !== opts.instanceId);
      const allAcked = () => peers.every((p) => got.has(p));
      while (!allAcked()) {
        const left = deadline - performance.now();
        if (left <= 0) return false;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiters.set(ref, () => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      return peers.length;
    } catch (e) {
      silence(e as Error);
      return false;
    } finally {
      acks.delete(ref);
      waiters.delete(ref);
    }
  }

  return {
    announce,
    /** True while this instance is certainly in the registry, so every revoker waits for its acknowledgement. */
    registered: () => performance.now() < validUntil,
    /** Resolves once subscribed (or after `ms`: Redis unreachable, the instance runs without the fast path). */
    async ready(ms = 3000) {
      await Promise.race([firstSubscription, Bun.sleep(ms)]);
      if (opts.apply) {
        await refresh();
        refresher = setInterval(() => void refresh(), timing.refreshMs);
      }
    },
    async close() {
      clearInterval(refresher);
      if (opts.apply) await cmd.zrem(registry, opts.instanceId).catch(() => {});
      cmd.disconnect();
      sub.disconnect();
    },
  };
}
