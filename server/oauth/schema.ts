import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { SignInEmail } from "../auth/schema";

const Text = (description: string, max = 2048) => Type.String({ minLength: 1, maxLength: max, description });

/** GET /oauth/authorize (RFC 6749 4.1.1, RFC 7636 4.3); S256 is the only method. */
export const AuthorizeQuery = Type.Object({
  response_type: Type.Literal("code"),
  client_id: Text("Client id registered with `simhost admin oauth-client create`", 200),
  redirect_uri: Text("One of the client's registered redirect URIs, exactly"),
  code_challenge: Type.String({ pattern: "^[A-Za-z0-9_-]{43}$", description: "BASE64URL(SHA-256(code_verifier))" }),
  code_challenge_method: Type.Literal("S256"),
  state: Type.Optional(Type.String({ maxLength: 1024, description: "Echoed back on the redirect" })),
  scope: Type.Optional(Type.String({ maxLength: 1024, description: "Ignored: a token acts as the user" })),
});
export type AuthorizeQuery = Static<typeof AuthorizeQuery>;

export const AuthorizationCodeGrant = Type.Object({
  grant_type: Type.Literal("authorization_code"),
  code: Text("The code from the authorization redirect", 200),
  redirect_uri: Text("The redirect_uri of the authorization request"),
  client_id: Text("The client the code was issued to", 200),
  code_verifier: Text("The PKCE verifier (43 to 128 characters)", 128),
});
export type AuthorizationCodeGrant = Static<typeof AuthorizationCodeGrant>;

export const RefreshTokenGrant = Type.Object({
  grant_type: Type.Literal("refresh_token"),
  refresh_token: Text("The latest refresh token of the grant", 200),
  client_id: Text("The client the token was issued to", 200),
  scope: Type.Optional(Type.String({ maxLength: 1024 })),
});
export type RefreshTokenGrant = Static<typeof RefreshTokenGrant>;

/** POST /oauth/token, form encoded (RFC 6749 4.1.3 and 6). */
export const TokenRequest = Type.Union([AuthorizationCodeGrant, RefreshTokenGrant]);

/** POST /oauth/revoke, form encoded (RFC 7009 2.1). */
export const RevokeRequest = Type.Object({
  token: Text("An access or refresh token", 200),
  // RFC 7009 2.1: a hint that does not locate the token widens the search; an unknown one is ignored,
  // not refused. Unbounded here as it was as an enum (the request's size limit bounds it): a bound
  // added to a request field reads as a narrowing to the breaking-change guard.
  token_type_hint: Type.Optional(Type.String({ description: "access_token or refresh_token: where to look first; any other value is ignored" })),
  client_id: Text("The client the token was issued to", 200),
});
export type RevokeRequest = Static<typeof RevokeRequest>;

export const TokenResponse = Type.Object({
  access_token: Type.String({ description: "Bearer token for /api; /api/me reports auth_type oauth" }),
  token_type: Type.Literal("Bearer"),
  expires_in: Type.Integer({ description: "Seconds until the access token expires" }),
  refresh_token: Type.String({ description: "Single use: each refresh answers a new one" }),
});

export const OAuthErrorBody = Type.Object({ error: Type.String(), error_description: Type.String() });

/** The sign-in page's forms; all carry the signed authorization request and the CSRF value. */
const PageForm = { request: Type.String({ minLength: 1 }), csrf: Type.String({ minLength: 1 }) };
export const SignInForm = Type.Object({ ...PageForm, step: Type.Literal("sign_in"), email: SignInEmail, password: Type.String() });
export const TotpForm = Type.Object({ ...PageForm, step: Type.Literal("totp"), ticket: Type.String({ minLength: 1 }), code: Type.String() });
export const ConsentForm = Type.Object({
  ...PageForm,
  step: Type.Literal("consent"),
  ticket: Type.String({ minLength: 1 }),
  decision: Type.Union([Type.Literal("approve"), Type.Literal("deny")]),
});
export type SignInForm = Static<typeof SignInForm>;
export type TotpForm = Static<typeof TotpForm>;
export type ConsentForm = Static<typeof ConsentForm>;

/** The first offending parameter of `value` against `schema`, or null when it conforms. */
export function firstInvalidField(schema: TSchema, value: Record<string, string>): string | null {
  const error = Value.Errors(schema, value).First();
  return error ? error.path.replace(/^\//, "").split("/")[0] || "request" : null;
}

/** An OAuth form's parameters: each one's first value; the names sent twice, and those holding a NUL (no stored value can), listed apart. */
export type OAuthForm = { fields: Record<string, string>; duplicates: string[]; withNul: string[] };

/** application/x-www-form-urlencoded → fields; null when the content type is wrong. */
export async function readForm(request: Request): Promise<OAuthForm | null> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) return null;
  return paramsToFields(new URLSearchParams(await request.text()));
}

export function paramsToFields(params: URLSearchParams): OAuthForm {
  const fields: Record<string, string> = {};
  const duplicates: string[] = [];
  const withNul: string[] = [];
  for (const [k, v] of params) {
    if (k.includes("\0") || v.includes("\0")) withNul.push(k);
    if (k in fields) duplicates.push(k);
    else fields[k] = v;
  }
  return { fields, duplicates, withNul };
}

/**
 * Which redirect URIs a client may register (RFC 6749 3.1.2, RFC 8252 for native and extension
 * clients): absolute, no fragment; https anywhere, http only to a loopback host; a browser
 * extension's scheme (chrome-extension:, moz-extension:, safari-web-extension:) or a private-use
 * scheme in reverse-domain form (com.example.app:, RFC 8252 7.1). An allow-list: any other scheme
 * (ws:, ftp:, view-source:, javascript: ...) would carry the code in clear to a remote host, or
 * into a page. Returns why a URI is refused, or null when it is fine.
 */
const EXTENSION_SCHEME = /^[a-z-]+-extension:$/;
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/;
const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);

export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "is not an absolute URI";
  }
  if (uri.length > 2048) return "is longer than 2048 characters";
  if (url.hash || uri.includes("#")) return "must not contain a fragment (#...)";
  const p = url.protocol;
  if (p !== "https:" && p !== "http:" && !EXTENSION_SCHEME.test(p) && !REVERSE_DOMAIN_SCHEME.test(p))
    return `must not use the ${p} scheme: use https, http to a loopback host, a browser extension's scheme (chrome-extension:) or a reverse-domain scheme (com.example.app:)`;
  if (url.protocol === "http:" && !LOOPBACK.has(url.hostname)) return "may use http only for a loopback host (127.0.0.1, [::1], localhost); use https";
  if ((url.protocol === "http:" || url.protocol === "https:") && url.username + url.password !== "") return "must not contain user information";
  return null;
}
