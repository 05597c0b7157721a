/**
 * The two OAuth endpoints (token, revoke) answer errors per RFC 6749 5.2 as
 * `{ error, error_description }`, not the API.md §1 shape: OAuth client libraries expect it.
 */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

export const invalidRequest = (description: string) => new OAuthError("invalid_request", description);
export const invalidGrant = (description: string) => new OAuthError("invalid_grant", description);
export const invalidClient = () => new OAuthError("invalid_client", "Unknown client_id.", 401);

// Token responses and errors carry credentials or reveal their state: never cached (RFC 6749 5.1).
const NO_STORE = { "cache-control": "no-store", pragma: "no-cache", "content-type": "application/json;charset=UTF-8" };

export function jsonNoStore(body: unknown, status = 200): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: NO_STORE });
}

export function oauthErrorResponse(e: OAuthError): Response {
  return jsonNoStore({ error: e.error, error_description: e.description }, e.status);
}
