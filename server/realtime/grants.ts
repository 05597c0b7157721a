import type { Permission } from "../auth/caller";
import type { RedisGuard } from "../lib/redis-guard";

/**
 * The credential that authorized a subscription. Sessions and OAuth tokens are `sessions` rows
 * (their user's membership in the grant's organization is part of their validity); an OAuth
 * token also names its grant (`grantId`), which the subscription outlives the token with; an API
 * key carries the first bytes of its digest too, so a regenerated key (same id) is told apart.
 */
export type Credential = { sessionId: number | null; grantId?: string | null; userId: number | null; apiKeyId: number | null; keyDigest: string | null };

/**
 * What the auth endpoint decided for a (socket, channel) pair: the organization it joins for and
 * the credential that asked. The signature proves the server agreed to the subscription, but not
 * for which organization nor on whose credential; the socket that later subscribes (possibly on
 * another instance) reads it back here, so events on a shared number reach only the organizations
 * allowed to see them, and revoking the credential ends the subscription.
 * Kept briefly: clients subscribe right after authorizing.
 */
export type Grant = {
  organizationId: number;
  credential: Credential;
  /**
   * An API key's permissions when it authorized: its subscription receives only the events of the
   * families they cover, as `GET /api/events` reads them (connection.ts `topicsOf`). Absent for a
   * user, who receives every event of the channel. A permission change revokes the key's grants.
   */
  permissions?: Permission[];
};

export type GrantStore = {
  put(socketId: string, channel: string, grant: Grant): Promise<void>;
  /**
   * The grant, removed: each authorization serves one subscribe (pusher-js authorizes every
   * subscribe afresh), so one socket cannot make a database check per frame by subscribing and
   * unsubscribing in a loop on one grant.
   */
  take(socketId: string, channel: string): Promise<Grant | null>;
};

const TTL_SECONDS = 300;

function parseGrant(raw: string | null): Grant | null {
  if (raw === null) return null;
  try {
    const g = JSON.parse(raw) as Grant;
    return typeof g?.organizationId === "number" && typeof g.credential === "object" && g.credential !== null ? g : null;
  } catch {
    return null;
  }
}

/**
 * Grants in Redis, shared by every instance. A copy stays in this process too, so while Redis is
 * unreachable a client that authorizes and connects on the same instance still subscribes; one
 * that connects to another instance is refused and authorizes again (docs/events.md).
 */
export function createRedisGrantStore(guard: RedisGuard, prefix: string): GrantStore {
  const key = (socketId: string, channel: string) => `${prefix}ws-grant:${socketId}:${channel}`;
  const local = createLocalGrantStore();
  return {
    async put(socketId, channel, grant) {
      await local.put(socketId, channel, grant);
      await guard.run(
        (redis) => redis.set(key(socketId, channel), JSON.stringify(grant), "EX", TTL_SECONDS),
        () => null,
      );
    },
    async take(socketId, channel) {
      const here = await local.take(socketId, channel);
      const shared = await guard.run(
        (redis) => (here !== null ? redis.del(key(socketId, channel)).then(() => null) : redis.getdel(key(socketId, channel))),
        () => null,
      );
      return here ?? parseGrant(shared);
    },
  };
}

/**
 * Grants one instance holds at most. Any signed-in caller may ask for grants of socket ids it
 * makes up (the socket may be on another instance, so the id cannot be checked here): past this
 * the oldest go first, so memory stays bounded (about 20 MiB) whatever the rate; a grant is taken
 * within seconds of being made, far sooner than a flood of this size pushes it out.
 */
export const MAX_LOCAL_GRANTS = 100_000;

export function createLocalGrantStore(now: () => number = Date.now, max = MAX_LOCAL_GRANTS): GrantStore {
  const grants = new Map<string, { grant: Grant; expires: number }>();
  let lastPrune = now();
  // Expired entries go in one pass at most once a minute, so the map stays small.
  function prune() {
    const t = now();
    if (t - lastPrune < 60_000) return;
    lastPrune = t;
    for (const [k, v] of grants) if (v.expires <= t) grants.delete(k);
  }
  return {
    async put(socketId, channel, grant) {
      prune();
      const k = `${socketId}:${channel}`;
      grants.delete(k);
      while (grants.size >= max) grants.delete(grants.keys().next().value!);
      grants.set(k, { grant, expires: now() + TTL_SECONDS * 1000 });
    },
    async take(socketId, channel) {
      const k = `${socketId}:${channel}`;
      const g = grants.get(k);
      grants.delete(k);
      return g && g.expires > now() ? g.grant : null;
    },
  };
}
