/**
 * API versions (SPEC.md part 9): `/api/...` is v1, `/api/vN/...` names a version. A version
 * answers with its own route where it has one; otherwise the router finds nothing for the
 * prefixed path and the app handles the request again without the prefix (`unversioned`). The
 * re-handled request remembers the address the client used, so links built from it (pagination)
 * keep the client's prefix and version-specific rules (a parameter removed in v2) still apply.
 */
export const SUPPORTED_VERSIONS = new Set([1, 2]);

const VERSIONED = /^\/api\/v(\d+)(\/.*)$/;

/** The re-handled request → the URL the client sent it to. */
const clientUrls = new WeakMap<Request, string>();

/** The request again without its version prefix, or null when the path names no supported version. */
export function unversioned(request: Request): Request | null {
  const url = new URL(request.url);
  const match = url.pathname.match(VERSIONED);
  if (!match || !SUPPORTED_VERSIONS.has(Number(match[1]))) return null;
  url.pathname = `/api${match[2]}`;
  const again = new Request(url.toString(), request);
  clientUrls.set(again, clientUrl(request));
  return again;
}

/** The URL as the client sent it (with its version prefix, if it had one). */
export function clientUrl(request: Request): string {
  return clientUrls.get(request) ?? request.url;
}

/** The API version the client asked for: the prefix's number, 1 without one. */
export function apiVersion(request: Request): number {
  const match = new URL(clientUrl(request)).pathname.match(VERSIONED);
  return match ? Number(match[1]) : 1;
}
