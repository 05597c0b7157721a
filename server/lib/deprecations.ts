import { apiVersion } from "./versions";

/**
 * Every deprecation of the API, in one place (SPEC.md part 9). A route entry (no `query`) marks
 * the whole operation; a `query` entry marks one query parameter and signals only when it is used.
 * Responses then carry `Deprecation` (RFC 9745) and a `Link` to the changelog entry; the OpenAPI
 * document marks them `deprecated: true`.
 *
 * A deprecated thing keeps working in the version that has it: breaking changes ship under a new
 * prefix (9.2), so it goes away only in `removedIn`, where using it answers 422. An end date
 * (`Sunset`, RFC 8594) belongs to a version as a whole (`VERSION_SUNSETS`), set once its successor
 * has shipped and at least 12 months after that (9.3); no single deprecation carries one.
 */
export type Deprecation = {
  method: string;
  /** The route as Elysia writes it, e.g. `/api/messages` or `/api/teams/:id`. */
  route: string;
  query?: string;
  /** When it was deprecated (ISO date). */
  deprecatedAt: string;
  /** The first API version without it; requests of that version or later using it answer 422. */
  removedIn?: number;
  /** What to use instead, named in the 422 of later versions. */
  replacement?: string;
  /** Anchor of its CHANGELOG.md entry. */
  changelog: string;
};

export const DEPRECATIONS: Deprecation[] = [
  // `limit` duplicates `per_page` (SPEC.md 4.2 lists both); new clients should send per_page.
  { method: "GET", route: "/api/messages", query: "limit", deprecatedAt: "2026-11-21", removedIn: 2, replacement: "per_page", changelog: "deprecated-limit" },
];

/** Version → the day it stops working (ISO date). None yet: v1 gets one only once v2 is complete and announced. */
export const VERSION_SUNSETS: Record<number, string> = {};

const toOpenApiPath = (route: string) => route.replace(/:(\w+)/g, "{$1}");

export type Removed = { field: string; message: string };

export function createDeprecations(list: Deprecation[], publicUrl: string, sunsets: Record<number, string> = VERSION_SUNSETS) {
  const link = (anchor: string, rel: string) => `<${publicUrl}/changelog#${anchor}>; rel="${rel}"; type="text/markdown"`;
  // Looked up on every request: only the few deprecated routes go on to read the query.
  const byRoute = Map.groupBy(list, (d) => `${d.method} ${d.route}`);
  const routes = new Set(list.map((d) => d.route));
  const anySunset = Object.keys(sunsets).length > 0;
  const used = (method: string, route: string, request: Request) => {
    const candidates = byRoute.get(`${method} ${route}`);
    if (!candidates) return [];
    const query = new URL(request.url).searchParams;
    return candidates.filter((d) => !d.query || query.has(d.query));
  };

  return {
    /** Headers for a request that used something deprecated in its version, or of a version with an end date; or null. */
    signal(method: string, route: string, request: Request): Record<string, string> | null {
      // Most requests: a route nothing deprecates, and no version with an end date.
      if (!anySunset && !(routes.has(route) && byRoute.has(`${method} ${route}`))) return null;
      const version = apiVersion(request);
      const hit = used(method, route, request).find((d) => d.removedIn === undefined || version < d.removedIn);
      const sunset = sunsets[version];
      if (!hit && !sunset) return null;
      const headers: Record<string, string> = {};
      const links: string[] = [];
      if (hit) {
        headers.deprecation = `@${Math.floor(Date.parse(hit.deprecatedAt) / 1000)}`;
        links.push(link(hit.changelog, "deprecation"));
      }
      if (sunset) {
        headers.sunset = new Date(sunset).toUTCString();
        links.push(link(`sunset-v${version}`, "sunset"));
      }
      headers.link = links.join(", ");
      return headers;
    },
    /** What this request uses that its version no longer has (answered with 422), or null. */
    removed(method: string, route: string, request: Request): Removed | null {
      if (!routes.has(route) || !byRoute.has(`${method} ${route}`)) return null;
      const version = apiVersion(request);
      const gone = used(method, route, request).find((d) => d.removedIn !== undefined && version >= d.removedIn);
      if (!gone) return null;
      const instead = gone.replacement ? `; use ${gone.replacement}` : "";
      return { field: gone.query ?? "request", message: `is not part of API v${version}${instead}` };
    },
    /** Marks deprecated operations and parameters in a generated OpenAPI document. */
    annotate(doc: { paths?: Record<string, Record<string, { deprecated?: boolean; parameters?: { name: string; in: string; deprecated?: boolean }[] }>> }) {
      for (const d of list) {
        const op = doc.paths?.[toOpenApiPath(d.route)]?.[d.method.toLowerCase()];
        if (!op) continue;
        if (!d.query) op.deprecated = true;
        else for (const p of op.parameters ?? []) if (p.in === "query" && p.name === d.query) p.deprecated = true;
      }
      return doc;
    },
  };
}
