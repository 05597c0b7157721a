import type { TSchema } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { randomString } from "../lib/crypto";
import { clientAddress } from "../lib/versions";
import type { Services } from "../services";
import { createAuthorizeFlow, type Outcome } from "./authorize";
import { createFormSigner } from "./form-signer";
import { invalidRequest, jsonNoStore, OAuthError, oauthErrorResponse } from "./oauth-error";
import { docs } from "./openapi";
import { errorPage, STYLE_HASH } from "./page";
import { AuthorizationCodeGrant, firstInvalidField, paramsToFields, RefreshTokenGrant, RevokeRequest, readForm } from "./schema";
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
  "content-security-policy": `default-src 'none'; style-src ${STYLE_HASH}; frame-ancestors 'none'; base-uri 'none'`,
};

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
  // Before any lookup: PostgreSQL refuses a NUL in text, which answered in API.md §1's shape.
  const nul = form.withNul[0];
  if (nul !== undefined)
    throw invalidRequest(nul.includes("\0") ? "A parameter name holds a NUL character." : `The ${nul} parameter must not contain NUL characters.`);
  return form.fields;
}

function checked<T>(schema: TSchema, fields: Record<string, string>): T {
  const bad = firstInvalidField(schema, fields);
  if (bad) throw invalidRequest(fields[bad] === undefined ? `The ${bad} parameter is required.` : `The ${bad} parameter is invalid.`);
  return fields as T;
}

/** OAuth errors thrown by `fn` become RFC 6749 5.2 answers; anything else goes to the app's onError. */
async function rfc(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof OAuthError) return oauthErrorResponse(e);
    throw e;
  }
}

/** The request log and metrics read `set.status`; a returned Response does not update it. */
async function withStatus(set: { status?: number | string }, response: Promise<Response>): Promise<Response> {
  const res = await response;
  set.status = res.status;
  return res;
}

type Server = { requestIP(r: Request): { address: string } | null } | null;

/** OAuth 2.0 authorization code flow with PKCE for public clients (API.md §2). */
/** The RFC 8414 authorization server metadata of a server at `base` (also the heartbeat bench's trivial-route baseline). */
export const authorizationServerMetadata = (base: string) => ({
  issuer: base,
  authorization_endpoint: `${base}/oauth/authorize`,
  token_endpoint: `${base}/oauth/token`,
  revocation_endpoint: `${base}/oauth/revoke`,
  response_types_supported: ["code"],
  grant_types_supported: ["authorization_code", "refresh_token"],
  code_challenge_methods_supported: ["S256"],
  token_endpoint_auth_methods_supported: ["none"],
  revocation_endpoint_auth_methods_supported: ["none"],
});

export function oauthRoutes(services: Pick<Services, "sql" | "limiter" | "clock" | "config" | "auth">) {
  const { sql, config } = services;
  const base = config.PUBLIC_URL;
  const tokens = createTokenService({ sql, accessTokenSeconds: config.OAUTH_ACCESS_TOKEN_SECONDS, change: services.auth.change });
  const signIn = createSignIn({ sql, limiter: services.limiter, clock: services.clock });
  let flow: Promise<ReturnType<typeof createAuthorizeFlow>> | undefined;
  const authorizeFlow = () => (flow ??= loadFormKey(sql).then((key) => createAuthorizeFlow({ sql, signer: createFormSigner(key, services.clock), signIn })));
  const secure = base.startsWith("https:") ? "; Secure" : "";

  /** Renders an outcome, (re)setting the CSRF cookie the page's forms are bound to. */
  function render(outcome: Outcome, nonce: string): Response {
    if ("redirect" in outcome) return new Response(null, { status: 303, headers: { location: outcome.redirect, "cache-control": "no-store" } });
    const cookie = `${CSRF_COOKIE}=${nonce}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age=3600${secure}`;
    return new Response(outcome.html, { status: outcome.status, headers: { ...PAGE_HEADERS, "set-cookie": cookie } });
  }

  async function showPage(request: Request) {
    const nonce = cookieValue(request, CSRF_COOKIE) ?? randomString(32);
    return render(await (await authorizeFlow()).start(new URL(request.url).searchParams, nonce), nonce);
  }

  async function submitPage(request: Request, server: Server) {
    const form = (await readForm(request)) ?? paramsToFields(new URLSearchParams());
    const cookie = cookieValue(request, CSRF_COOKIE);
    const nonce = cookie ?? randomString(32);
    if (form.withNul.length > 0)
      return render({ status: 400, html: errorPage("Invalid request", "The form held a NUL character; go back and try again.") }, nonce);
    const address = clientAddress(server, request);
    return render(await (await authorizeFlow()).submit(form.fields, cookie, address, nonce), nonce);
  }

  const token = (request: Request) =>
    rfc(async () => {
      const fields = await oauthForm(request);
      const grant = fields.grant_type;
      if (grant === "authorization_code") return jsonNoStore(await tokens.exchangeCode(checked(AuthorizationCodeGrant, fields)));
      if (grant === "refresh_token") return jsonNoStore(await tokens.refresh(checked(RefreshTokenGrant, fields)));
      throw grant
        ? new OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.")
        : invalidRequest("The grant_type parameter is required.");
    });

  const revoke = (request: Request) =>
    rfc(async () => {
      await tokens.revoke(checked(RevokeRequest, await oauthForm(request)));
      return jsonNoStore(undefined);
    });

  const metadata = () => authorizationServerMetadata(base);

  // Bodies are read by hand (parse: "none"): a malformed one must get an RFC error or the page, not API.md §1.
  return new Elysia()
    .get("/.well-known/oauth-authorization-server", metadata, { detail: docs.metadata })
    .get("/oauth/authorize", ({ request, set }) => withStatus(set, showPage(request)), { detail: docs.authorize })
    .post("/oauth/authorize", ({ request, server, set }) => withStatus(set, submitPage(request, server)), { parse: "none", detail: docs.authorizeForm })
    .post("/oauth/token", ({ request, set }) => withStatus(set, token(request)), { parse: "none", detail: docs.token })
    .post("/oauth/revoke", ({ request, set }) => withStatus(set, revoke(request)), { parse: "none", detail: docs.revoke });
}
