import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp } from "../server/app";
import { loadConfig } from "../server/config";
import { createLogger } from "../server/lib/logger";
import { createServices } from "../server/services";

/** The v1 OpenAPI document as the code serves it at /openapi.json, from the app built in-process on an embedded database. */
export async function liveOpenApiDocument<T = Record<string, unknown>>(): Promise<T> {
  const config = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), "simhost-openapi-")), LOG_LEVEL: "silent" });
  const services = await createServices(config, { logger: createLogger("silent") });
  try {
    const res = await buildApp(services).handle(new Request("http://localhost/openapi.json"));
    return (await res.json()) as T;
  } finally {
    await services.close();
  }
}
