import type { TObject, TSchema } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { randomString } from "../lib/crypto";
import type { Services } from "../services";
import { createAuthorizeFlow, type Outcome } from "./authorize";
import { createFormSigner } from "./form-signer";
import { invalidRequest, jsonNoStore, OAuthError, oauthErrorResponse } from "./oauth-error";
import {
  AuthorizationCodeGrant,
  AuthorizeQuery,
  firstInvalidField,
  OAuthErrorBody,
  paramsToFields,
  RefreshTokenGrant,
  RevokeRequest,
  readForm,
  SignInForm,
  TokenRequest,
  TokenResponse,
} from "./schema";
import { createSignIn } from "./sign-in";
import { loadFormKey } from "./store";
import { createTokenService } from "./token";

const CSRF_COOKIE = "simhost_oauth_csrf";

// The page may not be framed (clickjacking of the consent button) nor cached; no script runs on it.
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
};

const formBody = (schema: object, description: string) => ({
  description,
  required: true,
  content: { "application/x-www-form-urlencoded": { schema } },
});
const rfcError = { description: "RFC 6749 5.2 error", content: { "application/json": { schema: OAuthErrorBody } } };

// Documented, not validated by Elysia: a bad request must give the page or redirect of RFC 6749 4.1.2.1, not a JSON 422.
const queryParameters = (schema: TObject) =>
  Object.entries(schema.properties).map(([name, s]) => ({ name, in: "query", required: schema.required?.includes(name) ?? false, schema: s }));

function cookieValue(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return v.join("=") || undefined;
  }
  return undefined;
}

/** RFC 6749 token and RFC 7009 revocation parameters: a form, each parameter once, else invalid_request. */
async function oauthForm(request: Request): Promise<Record<string, string>> {
  const form = await readForm(request);
  if (!form) throw invalidRequest("Send the parameters as application/x-www-form-urlencoded.");
  if (form.duplicates.length > 0) throw invalidRequest(`The ${form.duplicates[0]} parameter is repeated.`);
  return form.fields;
}

function checked<T>(schema: TSchema, fields: Record<string, string>): T {
  const bad = firstInvalidField(schema, fields);
  if (bad) throw invalidRequest(fields[bad] === undefined ? `The ${bad} parameter is required.` : `The ${bad} parameter is invalid.`);
  return fields as T;
}

/** OAuth 2.0 authorization code flow with PKCE for public clients (API.md §2). */
export function oauthRoutes(services: Pick<Services, "sql" | "limiter" | "clock" | "config">) {
  const { sql, config } = services;
  const tokens = createTokenService({ sql, accessTokenSeconds: config.OAUTH_ACCESS_TOKEN_SECONDS });
  const signIn = createSignIn({ sql, limiter: services.limiter, clock: services.clock });
  let flow: Promise<ReturnType<typeof createAuthorizeFlow>> | undefined;
  const authorizeFlow = () => (flow ??= loadFormKey(sql).then((key) => createAuthorizeFlow({ sql, signer: createFormSigner(key, services.clock), signIn })));
  const secure = config.PUBLIC_URL.startsWith("https:") ? "; Secure" : "";

  /** Renders an outcome, (re)setting the CSRF cookie the page's forms are bound to. */
  function render(outcome: Outcome, nonce: string): Response {
    const cookie = `${CSRF_COOKIE}=${nonce}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age=3600${secure}`;
    if ("redirect" in outcome) return new Response(null, { status: 303, headers: { location: outcome.redirect, "cache-control": "no-store" } });
    return new Response(outcome.html, { status: outcome.status, headers: { ...PAGE_HEADERS, "set-cookie": cookie } });
  }

  async function rfc(fn: () => Promise<Response>): Promise<Response> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof OAuthError) return oauthErrorResponse(e);
      throw e;
    }
  }

  return new Elysia({ name: "simhost-oauth" })
    .get(
      "/.well-known/oauth-authorization-server",
      () => ({
        issuer: config.PUBLIC_URL,
        authorization_endpoint: `${config.PUBLIC_URL}/oauth/authorize`,
        token_endpoint: `${config.PUBLIC_URL}/oauth/token`,
        revocation_endpoint: `${config.PUBLIC_URL}/oauth/revoke`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
      }),
      { detail: { tags: ["OAuth"], summary: "Authorization server metadata (RFC 8414)", security: [] } },
    )
    .get(
      "/oauth/authorize",
      async ({ request }) => {
        const nonce = cookieValue(request, CSRF_COOKIE) ?? randomString(32);
        return render(await (await authorizeFlow()).start(new URL(request.url).searchParams, nonce), nonce);
      },
      {
        detail: {
          parameters: queryParameters(AuthorizeQuery),
          tags: ["OAuth"],
          summary: "Sign-in and consent page (RFC 6749 4.1.1, PKCE S256)",
          description: "HTML. Approval redirects to redirect_uri with code and state; errors after the client is known redirect with error.",
          security: [],
        },
      },
    )
    .post(
      "/oauth/authorize",
      async ({ request, server }) => {
        const form = (await readForm(request)) ?? paramsToFields(new URLSearchParams());
        const cookie = cookieValue(request, CSRF_COOKIE);
        const nonce = cookie ?? randomString(32);
        const address = server?.requestIP(request)?.address ?? "local";
        return render(await (await authorizeFlow()).submit(form.fields, cookie, address, nonce), nonce);
      },
      {
        parse: "none",
        detail: { tags: ["OAuth"], summary: "Sign-in page form steps (HTML)", requestBody: formBody(SignInForm, "A step of the page"), security: [] },
      },
    )
    .post(
      "/oauth/token",
      ({ request }) =>
        rfc(async () => {
          const fields = await oauthForm(request);
          const grant = fields.grant_type;
          if (grant === "authorization_code") return jsonNoStore(await tokens.exchangeCode(checked(AuthorizationCodeGrant, fields)));
          if (grant === "refresh_token") return jsonNoStore(await tokens.refresh(checked(RefreshTokenGrant, fields)));
          throw grant
            ? new OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.")
            : invalidRequest("The grant_type parameter is required.");
        }),
      {
        parse: "none",
        detail: {
          tags: ["OAuth"],
          summary: "Token endpoint (RFC 6749 4.1.3 and 6)",
          security: [],
          requestBody: formBody(TokenRequest, "authorization_code or refresh_token grant"),
          responses: { 200: { description: "Tokens", content: { "application/json": { schema: TokenResponse as object } } }, 400: rfcError, 401: rfcError },
        },
      },
    )
    .post(
      "/oauth/revoke",
      ({ request }) =>
        rfc(async () => {
          await tokens.revoke(checked(RevokeRequest, await oauthForm(request)));
          return jsonNoStore(undefined);
        }),
      {
        parse: "none",
        detail: {
          tags: ["OAuth"],
          summary: "Token revocation (RFC 7009)",
          security: [],
          requestBody: formBody(RevokeRequest, "The token to revoke"),
          responses: { 200: { description: "Revoked, or unknown (RFC 7009 2.2)" }, 400: rfcError, 401: rfcError },
        },
      },
    );
}
