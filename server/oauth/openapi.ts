import type { TObject } from "@sinclair/typebox";
import { OWN_INPUT } from "../lib/body-rules";
import { AuthorizeQuery, OAuthErrorBody, RevokeRequest, SignInForm, TokenRequest, TokenResponse } from "./schema";

/** The OpenAPI `detail` of each OAuth route. These routes validate by hand (RFC errors, not API.md §1). */
const formBody = (schema: object, description: string) => ({
  description,
  required: true,
  content: { "application/x-www-form-urlencoded": { schema } },
});
const rfcError = { description: "RFC 6749 5.2 error", content: { "application/json": { schema: OAuthErrorBody } } };

// Documented, not validated by Elysia: a bad request must give the page or redirect of RFC 6749 4.1.2.1, not a JSON 422.
const queryParameters = (schema: TObject) =>
  Object.entries(schema.properties).map(([name, s]) => ({ name, in: "query", required: schema.required?.includes(name) ?? false, schema: s }));

// Every OAuth route reads and judges its input itself (OWN_INPUT: not the app's API.md §1 NUL check).
const common = { tags: ["OAuth"], security: [], [OWN_INPUT]: true };
const page = { description: "The sign-in or consent page (HTML)", content: { "text/html": { schema: { type: "string" as const } } } };
const redirect = { description: "Redirect to the client's redirect_uri with code and state, or with error (RFC 6749 4.1.2)" };

export const docs = {
  metadata: { ...common, summary: "Authorization server metadata (RFC 8414)" },
  authorize: {
    ...common,
    summary: "Sign-in and consent page (RFC 6749 4.1.1, PKCE S256)",
    description: "HTML. Approval redirects to redirect_uri with code and state; errors after the client is known redirect with error.",
    parameters: queryParameters(AuthorizeQuery),
    responses: { 200: page, 303: redirect },
  },
  authorizeForm: {
    ...common,
    summary: "Sign-in page form steps (HTML)",
    requestBody: formBody(SignInForm, "A step of the page"),
    responses: { 200: page, 303: redirect },
  },
  token: {
    ...common,
    summary: "Token endpoint (RFC 6749 4.1.3 and 6)",
    requestBody: formBody(TokenRequest, "authorization_code or refresh_token grant"),
    responses: { 200: { description: "Tokens", content: { "application/json": { schema: TokenResponse as object } } }, 400: rfcError, 401: rfcError },
  },
  revoke: {
    ...common,
    summary: "Token revocation (RFC 7009)",
    requestBody: formBody(RevokeRequest, "The token to revoke"),
    responses: { 200: { description: "Revoked, or unknown (RFC 7009 2.2)" }, 400: rfcError, 401: rfcError },
  },
};
