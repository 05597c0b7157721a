import { writeSync } from "node:fs";
import { maxHeaderSize } from "node:http";
import { buildApp } from "./app";
import { bootstrapFirstOwner, firstOwnerNotice } from "./bootstrap";
import { ConfigError, developmentProviderSettings, loadConfig } from "./config";
import { consoleBundle } from "./console/bundle";
import { isDatabaseUnavailable } from "./db/client";
import { createServices } from "./services";

async function main() {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(1);
    }
    throw e;
  }
  const services = await createServices(config);
  // A connection reset on a database socket can surface as an 'error' event nobody listens to
  // (seen with Bun when PostgreSQL stops abruptly). The driver reconnects by itself, so such an
  // error must not end the process; anything else still does.
  const escaped = (kind: string) => (e: unknown) => {
    if (isDatabaseUnavailable(e)) return services.logger.warn({ err: (e as Error).message, kind }, "connection error outside any request");
    services.logger.fatal({ err: (e as Error)?.stack ?? String(e), kind }, "fatal error");
    process.exit(1);
  };
  process.on("uncaughtException", escaped("uncaughtException"));
  process.on("unhandledRejection", escaped("unhandledRejection"));
  // The pool's connections opened before the first request rather than by it; a refusal (the
  // database's connection limit) leaves the rest to open as they are needed.
  await services.db.warm().catch((e) => services.logger.warn({ err: (e as Error).message }, "database pool not opened in full at start"));
  const firstOwner = await bootstrapFirstOwner(services.sql);
  const app = buildApp(services);
  services.start();
  const server = app.listen({ port: config.PORT, hostname: "0.0.0.0" });
  // The web console's bundle, built now rather than on its first visit (a failure is retried then).
  consoleBundle().catch((e) => services.logger.error({ err: (e as Error).message }, "web console bundle failed"));
  services.logger.info({ port: server.server?.port, url: config.PUBLIC_URL, database: services.db.kind, bus: services.bus.kind }, "simhost listening");
  const devProvider = developmentProviderSettings(config);
  if (Object.keys(devProvider).length > 0)
    services.logger.warn(
      devProvider,
      "SMS provider: development values in use (set PROVIDER_AUTH_TOKEN, PROVIDER_NUMBER and PROVIDER_API_URL for a real provider)",
    );
  // Bun answers oversized headers itself, 431 with an empty body, past its own limit (see server/lib/request-limits.ts).
  if (maxHeaderSize <= config.MAX_HEADER_BYTES)
    services.logger.warn(
      { bunMaxHeaderSize: maxHeaderSize, MAX_HEADER_BYTES: config.MAX_HEADER_BYTES },
      "start with `npm start` (sh server/runtime.sh server/main.ts): headers past Bun's limit get an empty 431 instead of the API's error",
    );
  // To the terminal on standard error, in one write: the JSON log stream (standard output) never
  // carries the password, and no log line can be interleaved with the block.
  if (firstOwner) writeSync(2, firstOwnerNotice(firstOwner, config.PUBLIC_URL));

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, "shutting down");
    services.realtime.shutdown(); // clients reconnect at once, to another instance
    services.waiters.close(); // waiting calls are answered (503) instead of holding app.stop() for up to two minutes
    services.eventWaiters.close();
    await app.stop();
    await services.close();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

await main();
