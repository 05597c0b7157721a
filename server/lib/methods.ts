import { AppError } from "../errors";

type Route = { method: string; path: string };

/** A route's path as a pattern of whole paths: each `:param` one segment of anything but a slash. */
function pathPattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}$`);
}

/**
 * Which methods the app answers on a path, learnt from its routes once it is built: a request
 * whose path is routed under other methods only answers 405 with an `Allow` header naming them
 * (RFC 9110 15.5.6), where "No such route" would send its client looking for a typo in the path.
 * OPTIONS is answered on every routed path (`optionsAnswer`), so every path's methods include it.
 */
export function createMethodIndex() {
  let paths: { pattern: RegExp; methods: Set<string> }[] = [];
  return {
    learn(routes: Route[]) {
      const byPath = new Map<string, Set<string>>();
      for (const { method, path } of routes) {
        const methods = byPath.get(path) ?? new Set<string>();
        methods.add(method);
        // Bun answers HEAD wherever GET is routed.
        if (method === "GET") methods.add("HEAD");
        methods.add("OPTIONS");
        byPath.set(path, methods);
      }
      paths = [...byPath].map(([path, methods]) => ({ pattern: pathPattern(path), methods }));
    },
    /** The methods the app answers on `path`, or null where it answers none. */
    allowed(path: string): string[] | null {
      const methods = new Set<string>();
      for (const p of paths) if (p.pattern.test(path)) for (const m of p.methods) methods.add(m);
      return methods.size > 0 ? [...methods].sort() : null;
    },
  };
}

export const methodNotAllowed = (method: string, allowed: string[]) =>
  new AppError(405, "method_not_allowed", `This path does not take ${method}; it takes ${allowed.join(", ")}.`, {
    headers: { allow: allowed.join(", ") },
  });

/**
 * The answer to OPTIONS on a routed path that has no OPTIONS route of its own: 204 with `Allow`
 * (RFC 9110 9.3.7), before authentication like the 405. It grants no cross-origin access: no
 * `Access-Control-*` header, so a browser's preflight from another origin still fails, except on
 * the broadcasting routes, whose own OPTIONS routes answer CORS preflights.
 */
export const optionsAnswer = (allowed: string[], requestId: string | undefined) =>
  new Response(null, { status: 204, headers: { allow: allowed.join(", "), ...(requestId ? { "x-request-id": requestId } : {}) } });
