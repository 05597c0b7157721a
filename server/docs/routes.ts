import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Elysia } from "elysia";
import { toOpenApi31 } from "./openapi-31";

/**
 * The API reference at /docs (Scalar), served whole from this server: the browser bundle of
 * @scalar/api-reference as installed (its version pinned by bun.lock) and a start script, so the
 * page works without internet and its Content-Security-Policy allows this origin only.
 */
const DIST = dirname(Bun.resolveSync("@scalar/api-reference", import.meta.dir));
const BUNDLE = join(DIST, "browser", "standalone.js");
const { version } = JSON.parse(readFileSync(join(DIST, "..", "package.json"), "utf8")) as { version: string };

const BUNDLE_PATH = "/docs/assets/standalone.js";
const START_SCRIPT = "/docs/assets/start.js";
// The version in the URL lets browsers keep the 4 MB bundle until an upgrade changes it.
export const REFERENCE_SCRIPT = `${BUNDLE_PATH}?v=${version}`;

// Scalar adds <style> elements and style attributes at run time, hence 'unsafe-inline' for styles only.
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Nothing that would reach a third party: no web fonts, telemetry, proxy, AI agent, MCP or hosted services. */
const CONFIGURATION = {
  url: "/openapi.json",
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
  proxyUrl: "",
  externalUrls: { dashboardUrl: "", registryUrl: "", proxyUrl: "", apiBaseUrl: "" },
};

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>simhost API reference</title>
  </head>
  <body>
    <div id="reference"></div>
    <script src="${REFERENCE_SCRIPT}"></script>
    <script src="${START_SCRIPT}"></script>
  </body>
</html>
`;

const START = `Scalar.createApiReference("#reference", ${JSON.stringify(CONFIGURATION)});\n`;

const headers = (type: string, extra: Record<string, string> = {}) => ({ "content-type": type, "x-content-type-options": "nosniff", ...extra });

/**
 * Registered after the OpenAPI plugin, whose own /docs page this one replaces. `document30`: the
 * 3.0 document as /openapi.json serves it, which /docs/openapi-3.1.json upgrades (./openapi-31.ts).
 */
export function docsRoutes(document30: () => Promise<Record<string, unknown>>) {
  const hidden = { detail: { hide: true } };
  return new Elysia()
    .get("/docs", () => new Response(PAGE, { headers: headers("text/html; charset=utf-8", { "content-security-policy": DOCS_CSP }) }), hidden)
    .get(START_SCRIPT, () => new Response(START, { headers: headers("text/javascript; charset=utf-8", { "cache-control": "no-cache" }) }), hidden)
    .get(
      BUNDLE_PATH,
      () => new Response(Bun.file(BUNDLE), { headers: headers("text/javascript; charset=utf-8", { "cache-control": "public, max-age=86400" }) }),
      hidden,
    )
    .get("/docs/openapi-3.1.json", async () => Response.json(toOpenApi31(await document30())), hidden);
}
