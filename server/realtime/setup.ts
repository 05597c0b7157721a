import type Redis from "ioredis";
import type { Config } from "../config";
import type { Sql } from "../db/client";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import type { Bus } from "./bus";
import { createLocalGrantStore, createRedisGrantStore } from "./grants";
import { createRealtime } from "./hub";
import { loadAppCredentials } from "./store";

/** The realtime hub of an instance: credentials from the environment or the database, grants in Redis when there is one. */
export async function setupRealtime(deps: { config: Config; sql: Sql; redis?: Redis; bus: Bus; metrics: Metrics; logger: Logger }) {
  const { config } = deps;
  const stored = config.PUSHER_APP_KEY && config.PUSHER_APP_SECRET ? null : await loadAppCredentials(deps.sql);
  const credentials = { key: config.PUSHER_APP_KEY ?? stored!.key, secret: config.PUSHER_APP_SECRET ?? stored!.secret };
  const grants = deps.redis ? createRedisGrantStore(deps.redis, config.REDIS_PREFIX) : createLocalGrantStore();
  return createRealtime({ bus: deps.bus, credentials, grants, metrics: deps.metrics, logger: deps.logger });
}
