import { Elysia } from "elysia";
import type { Caller } from "../auth/caller";
import { callerOf } from "../auth/plugin";
import type { Pool } from "../db/client";
import { AppError, validationFailed } from "../errors";
import type { Clock } from "./clock";
import { sha256 } from "./crypto";
import type { SecretBox } from "./secret-box";

/**
 * `Idempotency-Key` on the POSTs that create something (docs/api-notes.md "Idempotent requests"),
 * as payment APIs made standard: the first request with a key does the work and its answer is
 * kept 24 h; the same key with the same request answers that answer again (`Idempotent-Replayed:
 * true`) without doing the work; the same key with another request answers 422
 * `idempotency_key_reused`; a request arriving while the first is still running answers 409
 * `request_in_progress`. Keys belong to the caller (organization and user or API key), so two
 * callers never see each other's answers. Answers of 5xx and 429 are not kept (a retry does the
 * work), nor refusals of the request itself (`kept`). A kept answer is stored sealed (AES-256-GCM
 * under SECRETS_KEY, lib/secret-box.ts): the answers of creates that show a secret once (API
 * keys, webhook secrets, device tokens) are replayed like any other, and never rest in plain text.
 */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A first request still "running" after this is taken as dead (its process stopped): the key is free again. */
export const ABANDONED_AFTER_MS = 60_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

type Held = { organizationId: number; principal: string; key: string };
/** Requests that hold a key, with what keeps their answer under it. */
const held = new WeakMap<Request, (status: number, body: unknown) => Promise<void>>();

/**
 * Called by app.ts's onError with the error a request is answered with, before the answer goes
 * out (so a retry that follows at once finds it): keeps it under the request's key, if it holds one.
 */
export async function settleFailedRequest(request: Request, error: AppError): Promise<void> {
  const keep = held.get(request);
  if (!keep) return;
  held.delete(request);
  const { errors, headers: _headers, ...rest } = error.extra;
  await keep(error.status, { message: error.message, code: error.code, ...rest, ...(errors ? { errors } : {}) });
}

/** Canonical JSON: object keys sorted, so a client re-serializing the same body gets the same fingerprint. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

export const fingerprintOf = (method: string, path: string, body: unknown) => sha256(`${method} ${path}\n${canonical(body)}`).toString("hex");

/** Refusals whose request may go through later under the same key: corrected, or once another organization's lock ends. */
const NOT_KEPT = new Set(["validation_failed", "number_locked"]);

/**
 * Whether an answer is kept under its key. Not a 5xx or 429 (a retry does the work), nor a
 * refusal of the request itself: a validation error (422 `validation_failed`) or an authorization
 * one (401, 403) from the route's own checks answers as those found before the key is looked at
 * do, so the corrected request, or the same one once allowed, goes through under the same key;
 * nor 409 `number_locked`, which names when the other organization's lock ends (`locked_until`):
 * kept, the retry it invites would have answered the stale refusal for 24 h.
 */
const kept = (status: number, body: unknown) => {
  const code = (body as { code?: unknown } | null)?.code;
  return status < 500 && status !== 429 && status !== 401 && status !== 403 && !(typeof code === "string" && NOT_KEPT.has(code));
};

const principalOf = (c: Caller) => (c.apiKey ? `api_key:${c.apiKey.id}` : `user:${c.user?.id ?? 0}`);

const inProgress = () =>
  new AppError(409, "request_in_progress", "A request with this Idempotency-Key is in progress; retry shortly.", { headers: { "retry-after": "1" } });

const replay = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "idempotent-replayed": "true" } });

export function idempotencyPlugin(deps: { sql: Pool; clock: Clock; secrets: SecretBox }) {
  const { sql } = deps;

  async function release(h: Held) {
    await sql`delete from idempotency_keys where organization_id = ${h.organizationId} and principal = ${h.principal} and key = ${h.key} and status is null`;
  }

  /** A kept answer; one sealed under a SECRETS_KEY that has since changed cannot be replayed. */
  async function openAnswer(sealed: string): Promise<unknown> {
    try {
      return JSON.parse(await deps.secrets.open(sealed));
    } catch {
      throw new AppError(
        409,
        "idempotency_answer_unreadable",
        "The answer kept under this Idempotency-Key can no longer be read (the server's SECRETS_KEY changed); check whether the work was done, then use a new key.",
      );
    }
  }

  async function keep(h: Held, status: number, body: unknown) {
    if (!kept(status, body)) return release(h);
    await sql`
      update idempotency_keys set status = ${status}, response_sealed = ${await deps.secrets.seal(JSON.stringify(body))}
      where organization_id = ${h.organizationId} and principal = ${h.principal} and key = ${h.key}`;
  }

  return new Elysia({ name: "simhost-idempotency" }).macro({
    idempotent: (on: boolean) => ({
      detail: on ? ({ "x-simhost-idempotent": true } as Record<string, unknown>) : {},
      async beforeHandle({ request, body, path }: { request: Request; body: unknown; path: string }) {
        const key = request.headers.get("idempotency-key");
        if (!on || key === null) return;
        if (!KEY.test(key)) throw validationFailed({ "Idempotency-Key": ["must be 1 to 255 visible ASCII characters"] });
        const caller = callerOf(request);
        if (!caller) return;
        const h: Held = { organizationId: caller.organization.id, principal: principalOf(caller), key };
        const fingerprint = fingerprintOf(request.method, path, body);
        const now = new Date(deps.clock.now());
        const staleBefore = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
        const abandonedBefore = new Date(now.getTime() - ABANDONED_AFTER_MS);
        // One statement claims the key: a new key, an expired one, or a first request that died.
        const [claimed] = await sql<{ claimed: boolean }[]>`
          insert into idempotency_keys (organization_id, principal, key, fingerprint, created_at)
          values (${h.organizationId}, ${h.principal}, ${key}, ${fingerprint}, ${now})
          on conflict (organization_id, principal, key) do update
            set fingerprint = excluded.fingerprint, status = null, response = null, response_sealed = null, created_at = excluded.created_at
            where idempotency_keys.created_at < ${staleBefore}
               or (idempotency_keys.status is null and idempotency_keys.created_at < ${abandonedBefore})
          returning true as claimed`;
        if (claimed) {
          held.set(request, (status, answer) => keep(h, status, answer));
          return;
        }
        const [row] = await sql<{ fingerprint: string; status: number | null; response: unknown; response_sealed: string | null }[]>`
          select fingerprint, status, response, response_sealed from idempotency_keys
          where organization_id = ${h.organizationId} and principal = ${h.principal} and key = ${key}`;
        if (!row) throw inProgress();
        if (row.fingerprint !== fingerprint) {
          throw new AppError(422, "idempotency_key_reused", "This Idempotency-Key was used with another request; use a new key for a new request.");
        }
        if (row.status === null) {
          throw inProgress();
        }
        return replay(row.status, row.response_sealed === null ? row.response : await openAnswer(row.response_sealed));
      },
      async afterHandle({ request, response, set }: { request: Request; response: unknown; set: { status?: number | string } }) {
        const keepAnswer = held.get(request);
        if (!keepAnswer) return;
        held.delete(request);
        await keepAnswer(typeof set.status === "number" ? set.status : 200, response);
      },
    }),
  });
}
