import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { BUN_BODY_BYTES, BUN_HEADER_BYTES } from "./lib/request-limits";

/** Every setting of API.md §4. Nothing else in the server reads process.env. */
const Env = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: "^https?://[^\\s]+$" })),
  DATABASE_URL: Type.Optional(Type.String({ pattern: "^postgres(ql)?://" })),
  REDIS_URL: Type.Optional(Type.String({ pattern: "^rediss?://" })),
  REDIS_PREFIX: Type.String({ minLength: 1, default: "simhost:" }),
  PROVIDER_AUTH_TOKEN: Type.String({ minLength: 8, default: "dev-provider-token" }),
  PROVIDER_NUMBER: Type.String({ pattern: "^\\+[1-9]\\d{6,14}$", default: "+15005550006" }),
  PROVIDER_API_URL: Type.String({ pattern: "^https?://", default: "http://127.0.0.1:3100" }),
  PUSHER_APP_KEY: Type.Optional(Type.String({ minLength: 1 })),
  PUSHER_APP_SECRET: Type.Optional(Type.String({ minLength: 8 })),
  SMTP_URL: Type.Optional(Type.String({ pattern: "^smtps?://" })),
  MAIL_FROM: Type.String({ default: "simhost <alerts@simhost.local>" }),
  WEBHOOK_ALLOW_PRIVATE: Type.Boolean({ default: false }),
  LOG_LEVEL: Type.Union(
    ["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l)),
    { default: "info" },
  ),
  DATA_DIR: Type.String({ minLength: 1, default: "./.data" }),
  HEARTBEAT_SECONDS: Type.Integer({ minimum: 1, default: 60 }),
  OFFLINE_AFTER_SECONDS: Type.Integer({ minimum: 1, default: 360 }),
  DOZE_OFFLINE_AFTER_SECONDS: Type.Integer({ minimum: 1, default: 960 }),
  SESSION_TTL_DAYS: Type.Integer({ minimum: 1, default: 30 }),
  OAUTH_ACCESS_TOKEN_SECONDS: Type.Integer({ minimum: 60, default: 3600 }),
  WEBHOOK_DISABLE_AFTER_DAYS: Type.Number({ exclusiveMinimum: 0, default: 5 }),
  // Webhook delivery logs and finished deliveries older than this are removed (hourly).
  WEBHOOK_LOG_RETENTION_DAYS: Type.Integer({ minimum: 1, default: 30 }),
  /** Events of the log (GET /api/events, webhook replays) are kept this long; the hourly retention job removes older ones. */
  EVENT_RETENTION_DAYS: Type.Integer({ minimum: 1, default: 30 }),
  // Seals webhook signing secrets (AES-256-GCM): 64 hex characters or base64 of 32 bytes. Unset: generated once and kept in `settings`.
  SECRETS_KEY: Type.Optional(Type.String({ pattern: "^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$" })),
  WORKERS: Type.Integer({ minimum: 0, maximum: 64, default: 4 }),
  // An outbound SMS on a BYOS number that no device picked up by then is failed.
  OUTBOUND_DEVICE_TIMEOUT_SECONDS: Type.Number({ exclusiveMinimum: 0, default: 300 }),
  // First retry delay of a provider send (doubling, capped at 10 min); shortened in tests.
  OUTBOUND_PROVIDER_RETRY_SECONDS: Type.Number({ exclusiveMinimum: 0, default: 5 }),
  // Largest request body (413 payload_too_large past it); the largest legitimate body is a few KiB.
  MAX_BODY_BYTES: Type.Integer({ minimum: 1024, maximum: BUN_BODY_BYTES, default: 64 * 1024 }),
  // Largest request header block, all fields together (413 payload_too_large past it). Below Bun's
  // --max-http-header-size (server/runtime.sh sets it to BUN_HEADER_BYTES), or Bun answers first with an empty 431.
  MAX_HEADER_BYTES: Type.Integer({ minimum: 1024, maximum: BUN_HEADER_BYTES - 1024, default: 16 * 1024 }),
  // Open WebSocket connections of one client address (the socket peer); the next is closed with 4004.
  WS_MAX_CONNECTIONS_PER_ADDRESS: Type.Integer({ minimum: 1, default: 1000 }),
  // Bearer token for GET /metrics; unset: /metrics answers 404.
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
});
type Env = Static<typeof Env>;

export type Config = Env & { PUBLIC_URL: string; embedded: boolean };

export class ConfigError extends Error {}

const booleans = new Set(["WEBHOOK_ALLOW_PRIVATE"]);

const PROVIDER_SETTINGS = ["PROVIDER_AUTH_TOKEN", "PROVIDER_NUMBER", "PROVIDER_API_URL"] as const;

/**
 * The SMS provider settings still at their development values (API.md §4: "dev values printed at
 * start"), which the server logs at start so that a deployment notices it talks to no real provider.
 */
export function developmentProviderSettings(config: Config): Partial<Record<(typeof PROVIDER_SETTINGS)[number], string>> {
  return Object.fromEntries(PROVIDER_SETTINGS.filter((key) => config[key] === Env.properties[key].default).map((key) => [key, config[key]]));
}

/** Reads and validates the environment once; throws ConfigError with a one-line message naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const value = env[key];
    if (value === undefined || value === "") continue;
    const schema = Env.properties[key as keyof Env];
    if (booleans.has(key)) raw[key] = value === "true" || value === "1" ? true : value === "false" || value === "0" ? false : value;
    else if (schema.type === "integer" || schema.type === "number") raw[key] = /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    else raw[key] = value;
  }
  const withDefaults = Value.Default(Env, raw) as Env;
  const first = Value.Errors(Env, withDefaults).First();
  if (first) {
    const name = first.path.replace(/^\//, "");
    throw new ConfigError(`invalid configuration: ${name} ${first.message.toLowerCase()} (got ${JSON.stringify(env[name])})`);
  }
  const publicUrl = (withDefaults.PUBLIC_URL ?? `http://localhost:${withDefaults.PORT}`).replace(/\/+$/, "");
  return { ...withDefaults, PUBLIC_URL: publicUrl, embedded: !withDefaults.DATABASE_URL };
}
