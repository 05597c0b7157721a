import { Elysia } from "elysia";
import { notFound } from "../errors";
import { ASSET_PREFIX, consoleBundle } from "./bundle";

/**
 * The web console (docs/console.md): index.html at `/` and at every client-side route, the
 * bundle's hashed assets under /assets/. The console holds a bearer token in sessionStorage, so
 * the one thing protecting it is that no script but its own can run on its origin: a strict
 * Content-Security-Policy (no inline script, nothing from another origin), no framing.
 */
export function consoleCsp(publicUrl: string): string {
  const ws = new URL(publicUrl);
  ws.protocol = ws.protocol === "https:" ? "wss:" : "ws:";
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${ws.origin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Security headers every console answer carries (the page and its assets). */
export function consoleHeaders(publicUrl: string): Record<string, string> {
  return {
    "content-security-policy": consoleCsp(publicUrl),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
  };
}

// Paths the console never answers for: the API and the server's other pages keep their own 404s.
const NOT_CONSOLE = /^\/(api|docs|oauth|app|assets|openapi\.json|metrics|changelog)(\/|$)/;

function page(entry: string, styles: string[]): string {
  const links = styles.map((s) => `    <link rel="stylesheet" href="${ASSET_PREFIX}${s}" />\n`).join("");
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="referrer" content="no-referrer" />
    <link rel="icon" href="data:," />
    <title>simhost console</title>
${links}    <script type="module" src="${ASSET_PREFIX}${entry}"></script>
  </head>
  <body>
    <div id="app"><noscript>The simhost console needs JavaScript.</noscript></div>
  </body>
</html>
`;
}

export function consoleRoutes(config: { PUBLIC_URL: string }) {
  const security = consoleHeaders(config.PUBLIC_URL);
  const hidden = { detail: { hide: true } };
  const index = async () => {
    const bundle = await consoleBundle();
    return new Response(page(bundle.entry, bundle.styles), {
      headers: { ...security, "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" },
    });
  };
  return {
    /** GET requests for a page (Accept: text/html) that no route answers: the console's client-side routes. */
    fallback(request: Request): Promise<Response> | null {
      if (request.method !== "GET" && request.method !== "HEAD") return null;
      if (!(request.headers.get("accept") ?? "").includes("text/html")) return null;
      if (NOT_CONSOLE.test(new URL(request.url).pathname)) return null;
      return index();
    },
    routes: new Elysia().get("/", index, hidden).get(
      `${ASSET_PREFIX}:name`,
      async ({ params }) => {
        const asset = (await consoleBundle()).assets.get(params.name);
        // The error shape of every other path (API.md §1).
        if (!asset) throw notFound("Asset");
        return new Response(asset.body, {
          headers: { ...security, "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable" },
        });
      },
      hidden,
    ),
  };
}
