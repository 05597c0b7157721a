import type { Pool, Sql } from "../db/client";
import { invalidState, notFound, permissionDenied } from "../errors";
import { paginate } from "../lib/pagination";
import { listLogs } from "./delivery-store";
import type { WebhookEngine } from "./engine";
import { integrationFields, movesStoredHeaders, validateTarget } from "./input";
import { mayReadHeaderValues, presentIntegration, presentLog, type Viewer } from "./present";
import { type ReplayRequest, redeliverLog, replayWindow } from "./replay";
import type { IntegrationCreateBody, IntegrationUpdateBody } from "./schema";
import { generateSigningSecret } from "./secrets";
import {
  findIntegration,
  findIntegrationForSend,
  type IntegrationRow,
  insertIntegration,
  insertMapping,
  MAX_INTEGRATIONS,
  replaceSecret,
  updateIntegration,
} from "./store";

/** Reads: any member, or an API key with webhooks.receive (API.md §2). */
export const read = { apiKey: "webhooks.receive" } as const;
/** Changes: admin or owner, or an API key with webhooks.receive, which covers every webhook operation of its organization. */
export const manage = { apiKey: "webhooks.receive", role: "admin" } as const;

/** What the webhook operations need, shared by the organization routes and the team view. */
export type WebhookDeps = { sql: Pool; webhooks: WebhookEngine };

export async function requireIntegration(sql: Sql, organizationId: number, id: number, o: { forUpdate?: boolean } = {}) {
  const row = await findIntegration(sql, organizationId, id, o);
  if (!row) throw notFound("Webhook integration");
  return row;
}

/** Creates an integration with a fresh secret (and, from the team view, its mapping, atomically). Returns it with the secret, the only time it is shown. */
export async function createIntegration(
  deps: WebhookDeps,
  viewer: Viewer,
  organizationId: number,
  body: IntegrationCreateBody,
  mapping?: { teamId: number; mode: "always" | "lock_required" },
) {
  await validateTarget(body, deps.webhooks.checkTarget);
  const secret = generateSigningSecret();
  const sealed = await deps.webhooks.secrets.seal(secret);
  const id = await deps.sql.begin(async (tx) => {
    const created = await insertIntegration(tx, organizationId, integrationFields(body), sealed);
    if (created === undefined) {
      throw invalidState(`An organization may have at most ${MAX_INTEGRATIONS} webhook integrations; delete one it no longer needs first.`);
    }
    if (mapping) await insertMapping(tx, created, mapping.teamId, mapping.mode);
    return created;
  });
  const row = await requireIntegration(deps.sql, organizationId, id);
  return { ...presentIntegration(row, viewer), secret };
}

export async function changeIntegration(deps: WebhookDeps, viewer: Viewer, organizationId: number, id: number, body: IntegrationUpdateBody) {
  const refuseMovingHeaders = (existing: IntegrationRow) => {
    if (!mayReadHeaderValues(viewer) && movesStoredHeaders(body, existing))
      throw permissionDenied(
        "Only an admin or owner signed in may move an integration's custom header values to another URL: send new values for its headers, or leave the URL as it is.",
      );
  };
  // The 403 before the target's 422, then again on the row as the update finds it.
  const before = await requireIntegration(deps.sql, organizationId, id);
  refuseMovingHeaders(before);
  await validateTarget(body, deps.webhooks.checkTarget, before.url);
  // What the body leaves out is merged from the row as it is under the lock: two updates at once
  // are applied one after the other (each read the row before either wrote, and the second wrote
  // the first one's fields back: a rotated header reverted without a word).
  await deps.sql.begin(async (tx) => {
    const existing = await requireIntegration(tx, organizationId, id, { forUpdate: true });
    refuseMovingHeaders(existing);
    await updateIntegration(tx, organizationId, id, { ...integrationFields(body, existing), is_active: body.is_active });
  });
  return presentIntegration(await requireIntegration(deps.sql, organizationId, id), viewer);
}

/** A new secret replaces the old in one update: the next attempt of any delivery signs with it. */
export async function regenerateSecret(deps: WebhookDeps, organizationId: number, id: number) {
  const secret = generateSigningSecret();
  const row = await replaceSecret(deps.sql, organizationId, id, await deps.webhooks.secrets.seal(secret));
  if (!row) throw notFound("Webhook integration");
  return { id: row.id, name: row.name, secret, updated_at: row.updated_at.toISOString() };
}

/**
 * Sends the integration a signed webhook.test now and answers how it went. `holdOpen` gives the
 * caller's connection the attempt's time and a margin: a target slower than Bun's idle timeout
 * (30 s) answers within its own timeout_seconds (up to 120), and the caller hears the outcome
 * instead of a connection reset.
 */
export async function testIntegration(deps: WebhookDeps, organizationId: number, id: number, holdOpen: (seconds: number) => void) {
  const row = await findIntegrationForSend(deps.sql, organizationId, id);
  if (!row) throw notFound("Webhook integration");
  holdOpen(row.timeout_seconds + 10);
  return deps.webhooks.sendTest(row);
}

export async function logsPage(sql: Sql, integrationId: number, query: { status?: string; page?: number; per_page?: number }, request: Request) {
  const page = query.page ?? 1;
  const perPage = query.per_page ?? 50;
  const { rows, total } = await listLogs(sql, integrationId, { status: query.status, page, perPage });
  return paginate({ data: rows.map(presentLog), total, page, perPage, request });
}

/** Redelivers the event of one log record of the integration (202: queued). */
export async function redeliver(deps: WebhookDeps, organizationId: number, integrationId: number, logId: number) {
  const integration = await requireIntegration(deps.sql, organizationId, integrationId);
  const data = await redeliverLog(deps.sql, integration, logId);
  deps.webhooks.wakeWorkers();
  return { message: "Redelivery queued.", data };
}

/** Replays the integration's events of a window as new deliveries (202: queued). */
export async function replay(deps: WebhookDeps, organizationId: number, integrationId: number, body: ReplayRequest) {
  const integration = await requireIntegration(deps.sql, organizationId, integrationId);
  const data = await replayWindow(deps.sql, integration, body);
  deps.webhooks.wakeWorkers();
  return { message: "Replay queued.", data };
}
