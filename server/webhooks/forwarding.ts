import type { Sql } from "../db/client";
import type { StoredEvent } from "../events/log";
import { type CreatedDelivery, type DeliveryForAttempt, type EventToMatch, findEventTargets, insertDeliveries } from "./delivery-store";
import { webhookBody } from "./events";
import { loadIntegrationsForAttempt } from "./live-store";
import { NOT_FROM_LOG } from "./subscriptions";

/**
 * Queue of replayed deliveries: the same handler with a small concurrency of its own
 * (server/jobs/registry.ts), so a replay holds few of an endpoint's slots and the live queue's
 * jobs are never claimed behind it.
 */
export const REPLAY_QUEUE = "webhook.replay";

const toMatch = (e: StoredEvent): EventToMatch => {
  const message = e.payload.message as { locked?: unknown; hosted_sim_id?: unknown } | undefined;
  return {
    id: e.position.id,
    organization_id: e.organizationId,
    type: e.type,
    team_id: e.teamId,
    hosted_sim_id: e.hostedSimId ?? (typeof message?.hosted_sim_id === "number" ? message.hosted_sim_id : null),
    locked: message?.locked === true,
  };
};

const messageIdOf = (e: StoredEvent) => {
  const id = (e.payload.message as { id?: unknown } | undefined)?.id;
  return e.type.startsWith("message.") && typeof id === "number" ? id : null;
};

/**
 * Creates the replayed deliveries of log events to one integration (docs/events.md "Webhooks"):
 * one per event the integration gets now (findEventTargets), each with its job on REPLAY_QUEUE,
 * in one query for the targets and one statement for the rows. The body is the event under its
 * own id, the bytes of every delivery of the event. Live deliveries are stored only with their
 * first attempt (matchLiveDeliveries, live-store.ts). Returns the deliveries created.
 */
export async function createReplayDeliveries(sql: Sql, events: StoredEvent[], integrationId: number): Promise<CreatedDelivery[]> {
  const deliverable = events.filter((e) => !NOT_FROM_LOG.includes(e.type));
  if (deliverable.length === 0) return [];
  const targets = await findEventTargets(sql, deliverable.map(toMatch), integrationId);
  if (targets.length === 0) return [];
  const byRow = new Map(deliverable.map((e) => [e.position.id, e]));
  const bodies = new Map<number, string>();
  const rows = targets.map((t) => {
    const e = byRow.get(t.event_row)!;
    let body = bodies.get(t.event_row);
    if (body === undefined) bodies.set(t.event_row, (body = webhookBody(e)));
    return { webhook_integration_id: t.integration_id, event_id: e.cursor, event_type: e.type, message_id: messageIdOf(e), body, origin: "replay" as const };
  });
  return insertDeliveries(sql, rows, REPLAY_QUEUE);
}

/**
 * The live deliveries of log events, ready for their first attempt and not stored (the log
 * consumer writes each with its outcome): per event (by its row id), the deliveries it gets, in
 * integration order; an event that no integration gets is absent. Two queries: the targets
 * (findEventTargets) and what the attempts need of their integrations.
 */
export async function matchLiveDeliveries(sql: Sql, events: StoredEvent[], disableAfterSeconds: number): Promise<Map<number, DeliveryForAttempt[]>> {
  const out = new Map<number, DeliveryForAttempt[]>();
  const deliverable = events.filter((e) => !NOT_FROM_LOG.includes(e.type));
  if (deliverable.length === 0) return out;
  const targets = await findEventTargets(sql, deliverable.map(toMatch));
  if (targets.length === 0) return out;
  const integrations = await loadIntegrationsForAttempt(sql, [...new Set(targets.map((t) => t.integration_id))], disableAfterSeconds);
  const byRow = new Map(deliverable.map((e) => [e.position.id, e]));
  const bodies = new Map<number, string>();
  for (const t of targets) {
    const e = byRow.get(t.event_row)!;
    const i = integrations.get(t.integration_id);
    if (!i) continue; // removed since the match
    let body = bodies.get(t.event_row);
    if (body === undefined) bodies.set(t.event_row, (body = webhookBody(e)));
    const list = out.get(t.event_row) ?? [];
    if (list.length === 0) out.set(t.event_row, list);
    list.push({
      id: null,
      event_id: e.cursor,
      event_type: e.type,
      message_id: messageIdOf(e),
      body,
      status: "pending",
      attempts: 0,
      integration_id: i.id,
      url: i.url,
      headers: i.headers,
      timeout_seconds: i.timeout_seconds,
      retry_count: i.retry_count,
      is_active: i.is_active,
      secret_sealed: i.secret_sealed,
      failing_too_long: i.failing_too_long,
    });
  }
  return out;
}
