/**
 * Every deprecation of the API, in one place. A route entry (no `query`) marks the whole
 * operation; a `query` entry marks one query parameter and signals only when it is used.
 * Responses then carry `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and a `Link` to the
 * changelog entry; the OpenAPI document marks them `deprecated: true`.
 */
export type Deprecation = {
  method: string;
  /** The route as Elysia writes it, e.g. `/api/messages` or `/api/teams/:id`. */
  route: string;
  query?: string;
  /** When it was deprecated, and when it stops working (ISO dates). */
  deprecatedAt: string;
  sunsetAt: string;
  /** Anchor of its CHANGELOG.md entry. */
  changelog: string;
};

export const DEPRECATIONS: Deprecation[] = [
  // `limit` duplicates `per_page` (SPEC.md 4.2 lists both); new clients should send per_page.
  { method: "GET", route: "/api/messages", query: "limit", deprecatedAt: "2026-11-21", sunsetAt: "2027-11-21", changelog: "deprecated-limit" },
];

const toOpenApiPath = (route: string) => route.replace(/:(\w+)/g, "{$1}");

export function createDeprecations(list: Deprecation[], publicUrl: string) {
  const headersFor = (d: Deprecation) => ({
    deprecation: `@${Math.floor(Date.parse(d.deprecatedAt) / 1000)}`,
    sunset: new Date(d.sunsetAt).toUTCString(),
    link: `<${publicUrl}/changelog#${d.changelog}>; rel="deprecation"; type="text/markdown"`,
  });

  // Looked up on every request: only the few deprecated routes go on to read the query.
  const byRoute = Map.groupBy(list, (d) => `${d.method} ${d.route}`);

  return {
    /** Headers for a request that used something deprecated, or null. */
    signal(method: string, route: string, url: string): Record<string, string> | null {
      const candidates = byRoute.get(`${method} ${route}`);
      if (!candidates) return null;
      const query = new URL(url).searchParams;
      const hit = candidates.find((d) => !d.query || query.has(d.query));
      return hit ? headersFor(hit) : null;
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
