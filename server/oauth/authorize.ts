import { createHash } from "node:crypto";
import { credentialsEpoch } from "../auth/store";
import type { Pool } from "../db/client";
import type { FormSigner } from "./form-signer";
import { consentPage, errorPage, type FormContext, type SignInErrors, signInPage, totpPage } from "./page";
import { isValidS256Challenge } from "./pkce";
import { ConsentForm, firstInvalidField, paramsToFields, SignInForm, TotpForm } from "./schema";
import type { createSignIn } from "./sign-in";
import * as store from "./store";
import { CODE_TTL_SECONDS } from "./token";

/** A validated authorization request, carried signed through the page's steps. */
export type AuthRequest = { client_id: string; redirect_uri: string; code_challenge: string; state?: string };
type Client = store.OAuthClientRow;

/** What the route sends back: an HTML page, or a redirect to the client (RFC 6749 4.1.2 / 4.1.2.1). */
export type Outcome = { status: number; html: string } | { redirect: string };

const REQUEST_TTL_SECONDS = 30 * 60;
const TOTP_TICKET_TTL_SECONDS = 5 * 60;
const CONSENT_TICKET_TTL_SECONDS = 10 * 60;

/** A step's proof: user `uid` passed the previous steps of request `rq` in credentials epoch `ep` (auth/store.ts `inEpoch`). */
type Ticket = { uid: number; rq: string; ep: number };

export function redirectTo(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

const redirectError = (r: Pick<AuthRequest, "redirect_uri" | "state">, error: string, description: string): Outcome => ({
  redirect: redirectTo(r.redirect_uri, { error, error_description: description, state: r.state }),
});
const pageError = (title: string, message: string, status = 400): Outcome => ({ status, html: errorPage(title, message) });
const digest = (s: string) => createHash("sha256").update(s).digest("base64url").slice(0, 22);

/**
 * RFC 6749 4.1.2.1: until client_id and redirect_uri are known good, errors are shown on the
 * page (redirecting would make us an open redirector); after that they go back to the client.
 */
export async function validateAuthorizeRequest(sql: Pool, params: URLSearchParams): Promise<{ request: AuthRequest; client: Client } | Outcome> {
  const one = (k: string) => (params.getAll(k).length === 1 ? params.get(k)! : undefined);
  // No stored value holds a NUL (PostgreSQL refuses one in text): named on the page before any
  // lookup when it is in client_id or redirect_uri, sent back to the client when elsewhere.
  const withNul = paramsToFields(params).withNul[0];
  const clientId = one("client_id");
  const redirectUri = one("redirect_uri");
  if (clientId?.includes("\0") || redirectUri?.includes("\0"))
    return pageError("Invalid request", "The client_id and redirect_uri must not hold NUL characters.");
  if (!clientId) return pageError("Invalid request", "The request must name exactly one client_id.");
  const client = await store.findClient(sql, clientId);
  if (!client) return pageError("Unknown application", "No application is registered with this client_id.");
  if (!redirectUri || !client.redirect_uris.includes(redirectUri)) {
    return pageError("Invalid redirect URI", "The redirect_uri is missing or is not registered for this application.");
  }
  const state = one("state");
  const back = { redirect_uri: redirectUri, state: state ?? params.get("state") ?? undefined };
  if (withNul !== undefined)
    return redirectError({ ...back, state: back.state?.includes("\0") ? undefined : back.state }, "invalid_request", "A parameter holds a NUL character.");
  const duplicate = [...new Set(params.keys())].find((k) => params.getAll(k).length > 1);
  if (duplicate) return redirectError(back, "invalid_request", `The ${duplicate} parameter is repeated.`);
  const responseType = one("response_type");
  if (!responseType) return redirectError(back, "invalid_request", "response_type is required.");
  if (responseType !== "code") return redirectError(back, "unsupported_response_type", "Only response_type=code is supported.");
  const method = one("code_challenge_method");
  if (!one("code_challenge")) return redirectError(back, "invalid_request", "code_challenge is required (PKCE, RFC 7636).");
  if (method !== "S256") return redirectError(back, "invalid_request", "code_challenge_method must be S256; plain is not supported.");
  if (!isValidS256Challenge(one("code_challenge")!)) return redirectError(back, "invalid_request", "code_challenge must be 43 base64url characters.");
  if (state !== undefined && state.length > 1024) return redirectError(back, "invalid_request", "state is longer than 1024 characters.");
  return { client, request: { client_id: client.client_id, redirect_uri: redirectUri, code_challenge: one("code_challenge")!, state } };
}

export type AuthorizeDeps = { sql: Pool; signer: FormSigner; signIn: ReturnType<typeof createSignIn> };

export function createAuthorizeFlow(deps: AuthorizeDeps) {
  const { sql, signer } = deps;

  function context(client: Client, requestToken: string, nonce: string): FormContext {
    return { clientName: client.name, request: requestToken, csrf: signer.csrfFor(nonce, requestToken) };
  }

  /** GET: validate, then show the sign-in form carrying the signed request. */
  async function start(params: URLSearchParams, nonce: string): Promise<Outcome> {
    const v = await validateAuthorizeRequest(sql, params);
    if (!("request" in v)) return v;
    const token = signer.sign("request", v.request, REQUEST_TTL_SECONDS);
    return { status: 200, html: signInPage(context(v.client, token, nonce)) };
  }

  /** POST: one step of sign-in → (TOTP) → consent, each proven by the previous step's signed ticket. */
  async function submit(fields: Record<string, string>, nonce: string | undefined, address: string, newNonce: string): Promise<Outcome> {
    const request = signer.verify<AuthRequest>("request", fields.request);
    if (!request) return pageError("Sign-in expired", "This sign-in page has expired or was altered.");
    const client = await store.findClient(sql, request.client_id);
    if (!client?.redirect_uris.includes(request.redirect_uri)) return pageError("Unknown application", "This application is no longer registered.");
    const restart = (form: string, status = 403) => ({ status, html: signInPage(context(client, fields.request!, nonce ?? newNonce), { errors: { form } }) });
    if (!signer.checkCsrf(nonce, fields.request!, fields.csrf)) return restart("Your sign-in session expired. Please sign in again.");
    const ctx = context(client, fields.request!, nonce!);
    const rq = digest(fields.request!);
    if (fields.step === "sign_in") return signInStep(ctx, rq, fields, address);
    const stage = fields.step === "totp" ? "totp" : "consent";
    const ticket = signer.verify<Ticket>(stage, fields.ticket);
    const expired = () => restart("Your sign-in expired. Please sign in again.");
    // A ticket of an earlier epoch: the password changed, or the user signed out everywhere else, since.
    if (!ticket || ticket.rq !== rq || ticket.ep !== (await credentialsEpoch(sql, ticket.uid))) return expired();
    if (fields.step === "totp") return totpStep(ctx, ticket, fields, address);
    if (firstInvalidField(ConsentForm, fields)) return pageError("Invalid request", "The consent form was incomplete.");
    if (fields.decision === "deny") return redirectError(request, "access_denied", "The user denied access.");
    const code = await store.insertCode(sql, {
      clientId: client.id,
      userId: ticket.uid,
      epoch: ticket.ep,
      redirectUri: request.redirect_uri,
      codeChallenge: request.code_challenge,
      ttlSeconds: CODE_TTL_SECONDS,
    });
    if (!code) return expired();
    return { redirect: redirectTo(request.redirect_uri, { code, state: request.state }) };
  }

  async function signInStep(ctx: FormContext, rq: string, fields: Record<string, string>, address: string): Promise<Outcome> {
    const email = (fields.email ?? "").trim();
    const errors: SignInErrors = {};
    const invalid = firstInvalidField(SignInForm, { ...fields, email });
    if (!email || (invalid !== null && invalid !== "email")) errors.email = "Enter your email address.";
    else if (invalid === "email") errors.email = "Enter an email address like name@example.com.";
    if (!fields.password) errors.password = "Enter your password.";
    if (errors.email || errors.password) return { status: 422, html: signInPage(ctx, { email, errors }) };
    const result = await deps.signIn.checkPassword(email, fields.password!, address);
    if (!result.ok) return failedSignIn(ctx, email, result.retryIn);
    const passed = { uid: result.userId, rq, ep: result.epoch };
    return result.needsCode ? showTotp(ctx, passed) : showConsent(ctx, passed);
  }

  function failedSignIn(ctx: FormContext, email: string, retryIn?: number): Outcome {
    if (retryIn) {
      const form = `Too many failed attempts. Try again in ${Math.ceil(retryIn / 60)} minute${retryIn > 60 ? "s" : ""}.`;
      return { status: 429, html: signInPage(ctx, { email, errors: { form } }) };
    }
    return { status: 401, html: signInPage(ctx, { email, errors: { password: "The email or password is incorrect." } }) };
  }

  async function totpStep(ctx: FormContext, ticket: Ticket, fields: Record<string, string>, address: string): Promise<Outcome> {
    if (firstInvalidField(TotpForm, fields) || !fields.code?.trim()) {
      return { status: 422, html: totpPage(ctx, { ticket: fields.ticket!, error: "Enter the 6-digit code from your authenticator app." }) };
    }
    const result = await deps.signIn.checkCode(ticket.uid, fields.code, address);
    if (result.ok) return showConsent(ctx, ticket);
    if (result.retryIn) {
      const formError = `Too many wrong codes. Try again in ${Math.ceil(result.retryIn / 60)} minutes.`;
      return { status: 429, html: totpPage(ctx, { ticket: fields.ticket!, formError }) };
    }
    return { status: 401, html: totpPage(ctx, { ticket: fields.ticket!, error: "That code is not valid. Check your app and try again." }) };
  }

  function showTotp(ctx: FormContext, passed: Ticket): Outcome {
    const { uid, rq, ep } = passed;
    return { status: 200, html: totpPage(ctx, { ticket: signer.sign("totp", { uid, rq, ep }, TOTP_TICKET_TTL_SECONDS) }) };
  }

  async function showConsent(ctx: FormContext, passed: Ticket): Promise<Outcome> {
    const { uid, rq, ep } = passed;
    const user = await store.findUserForConsent(sql, uid);
    if (!user) return { status: 403, html: signInPage(ctx, { errors: { form: "Your sign-in expired. Please sign in again." } }) };
    const ticket = signer.sign("consent", { uid, rq, ep }, CONSENT_TICKET_TTL_SECONDS);
    return { status: 200, html: consentPage(ctx, { ticket, userName: user.name, userEmail: user.email }) };
  }

  return { start, submit };
}
