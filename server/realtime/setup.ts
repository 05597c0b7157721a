import type { Config } from "../config";
import type { Sql } from "../db/client";
import type { Bus } from "../events/bus";
import type { StoredEvent } from "../events/log";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import type { RedisGuard } from "../lib/redis-guard";
import { createLocalGrantStore, createRedisGrantStore } from "./grants";
import { createRealtime } from "./hub";
import type { Revocation } from "./revocation";
import { loadAppCredentials, standingCredentials } from "./store";

/**
 * The realtime hub of an instance: credentials from the environment or the database, grants in
 * Redis when there is one, subscriptions ended by the authenticator's revocations.
 */
export async function setupRealtime(deps: {
  config: Config;
  sql: Sql;
  redis?: RedisGuard;
  bus: Bus;
  onEvents(listener: (events: StoredEvent[]) => void): () => void;
  onRevoked(listener: (r: Revocation) => void): () => void;
  metrics: Metrics;
  logger: Logger;
}) {
  const { config, sql } = deps;
  const stored = config.PUSHER_APP_KEY && config.PUSHER_APP_SECRET ? null : await loadAppCredentials(sql);
  const credentials = { key: config.PUSHER_APP_KEY ?? stored!.key, secret: config.PUSHER_APP_SECRET ?? stored!.secret };
  const grants = deps.redis ? createRedisGrantStore(deps.redis, config.REDIS_PREFIX) : createLocalGrantStore();
  const realtime = createRealtime({
    onEvents: deps.onEvents,
    credentials,
    grants,
    standing: (list) => standingCredentials(sql, list),
    onRevoked: deps.onRevoked,
    metrics: deps.metrics,
    logger: deps.logger,
    limits: { maxConnectionsPerAddress: config.WS_MAX_CONNECTIONS_PER_ADDRESS },
  });
  // Back from an outage the bus may have missed revocations: every subscription is checked again.
  deps.bus.onResumed(() => realtime.revoked({ everything: true }));
  return realtime;
}
