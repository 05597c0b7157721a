/**
 * API versions (SPEC.md part 9): `/api/...` is v1, `/api/vN/...` names a version. A version
 * answers with its own route where it has one; otherwise the router finds nothing for the
 * prefixed path and the app handles the request again without the prefix (`unversioned`). The
 * re-handled request remembers the request the client sent: links built from it (pagination)
 * keep the client's prefix, version-specific rules (a parameter removed in v2) still apply, and
 * the client's address is the socket's (`clientAddress`), not that of a request without one.
 */
export const SUPPORTED_VERSIONS = new Set([1, 2]);

const VERSIONED = /^\/api\/v(\d+)(\/.*)$/;

/** The re-handled request → the request the client sent. */
const clientRequests = new WeakMap<Request, Request>();

/**
 * The request again without its version prefix, or null when the path names no supported version
 * or the request is already such a copy: one prefix is taken off, once (`/api/v1/v1/...` and
 * `/api/v1/v2/...` are no routes; taken off again and again a prefix cost a copy of the URL per
 * `/v1`, and a stack frame each).
 */
export function unversioned(request: Request): Request | null {
  if (clientRequests.has(request)) return null;
  const url = new URL(request.url);
  const match = url.pathname.match(VERSIONED);
  if (!match || !SUPPORTED_VERSIONS.has(Number(match[1])) || /^\/v\d+(\/|$)/.test(match[2]!)) return null;
  url.pathname = `/api${match[2]}`;
  const again = new Request(url.toString(), request);
  clientRequests.set(again, clientRequests.get(request) ?? request);
  return again;
}

/** The URL as the client sent it (with its version prefix, if it had one). */
export function clientUrl(request: Request): string {
  return (clientRequests.get(request) ?? request).url;
}

/**
 * The client's address: the socket peer of the request it sent (a re-handled request has no
 * socket of its own; Bun's `requestIP` knows only the original). Requests without a socket
 * (in-process: tests, `app.handle`) share one address, "local". What the sign-in limits count by.
 */
export function clientAddress(server: { requestIP(r: Request): { address: string } | null } | null | undefined, request: Request): string {
  return server?.requestIP(clientRequests.get(request) ?? request)?.address ?? "local";
}

/**
 * Gives the client's connection `seconds` before Bun closes it as idle (a long-poll, quiet on
 * purpose), on the request the client sent: Bun's `server.timeout` knows only that one, and did
 * nothing for a re-handled copy (a long-poll under /api/v1 or /api/v2 was cut at the 30 s idle
 * timeout, the client seeing a reset).
 */
export function holdOpen(server: { timeout(r: Request, seconds: number): void } | null | undefined, request: Request, seconds: number) {
  server?.timeout(clientRequests.get(request) ?? request, seconds);
}

/** The API version the client asked for: the prefix's number, 1 without one. */
export function apiVersion(request: Request): number {
  const match = new URL(clientUrl(request)).pathname.match(VERSIONED);
  return match ? Number(match[1]) : 1;
}
