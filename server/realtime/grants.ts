import type Redis from "ioredis";

/**
 * What the auth endpoint learnt about a (socket, channel) pair: the organization it joins for.
 * The signature proves the server agreed to the subscription, but not for which organization;
 * the socket that later subscribes (possibly on another instance) reads it back here, so events
 * on a shared number reach only the organizations allowed to see them. Kept briefly: clients
 * subscribe right after authorizing.
 */
export type GrantStore = {
  put(socketId: string, channel: string, organizationId: number): Promise<void>;
  take(socketId: string, channel: string): Promise<number | null>;
};

const TTL_SECONDS = 300;

/**
 * Grants in Redis, shared by every instance. A copy stays in this process too, so while Redis is
 * unreachable a client that authorizes and connects on the same instance still gets its events.
 */
export function createRedisGrantStore(redis: Redis, prefix: string): GrantStore {
  const key = (socketId: string, channel: string) => `${prefix}ws-grant:${socketId}:${channel}`;
  const local = createLocalGrantStore();
  return {
    async put(socketId, channel, organizationId) {
      await local.put(socketId, channel, organizationId);
      await redis.set(key(socketId, channel), String(organizationId), "EX", TTL_SECONDS).catch(() => {});
    },
    async take(socketId, channel) {
      const here = await local.take(socketId, channel);
      if (here !== null) return here;
      const value = await redis.get(key(socketId, channel)).catch(() => null);
      return value === null ? null : Number(value);
    },
  };
}

export function createLocalGrantStore(now: () => number = Date.now): GrantStore {
  const grants = new Map<string, { org: number; expires: number }>();
  let lastPrune = now();
  // Expired entries go in one pass at most once a minute, so the map stays small.
  function prune() {
    const t = now();
    if (t - lastPrune < 60_000) return;
    lastPrune = t;
    for (const [k, v] of grants) if (v.expires <= t) grants.delete(k);
  }
  return {
    async put(socketId, channel, organizationId) {
      prune();
      grants.set(`${socketId}:${channel}`, { org: organizationId, expires: now() + TTL_SECONDS * 1000 });
    },
    async take(socketId, channel) {
      const g = grants.get(`${socketId}:${channel}`);
      return g && g.expires > now() ? g.org : null;
    },
  };
}
