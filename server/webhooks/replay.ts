import { isForeignKeyViolation, type Pool } from "../db/client";
import { invalidState, notFound, validationFailed } from "../errors";
import { type EventType, event } from "../events/catalog";
import { decodeCursor } from "../events/cursor";
import { readEventAt, readEventsCreatedBetween } from "../events/log";
import { isDateTime } from "../lib/fields";
import { findLog, hasPendingReplay, insertDeliveries } from "./delivery-store";
import { webhookBody } from "./events";
import { createReplayDeliveries } from "./forwarding";
import type { IntegrationRow } from "./store";
import { ALL_EVENTS, eventTypeErrors } from "./subscriptions";

/** The longest window one replay covers. */
export const REPLAY_MAX_WINDOW_DAYS = 7;
/** The most events one replay sends; a busier window is replayed in parts. */
export const REPLAY_MAX_EVENTS = 10_000;

/** 409 while the integration's last replay has deliveries not yet tried: one replay at a time. */
const replayInProgress = () => invalidState("A replay of this integration is still being sent; try again when it is done.");

export type ReplayRequest = { since: string; until: string; event_types?: string[] };

/**
 * The window's bounds, or 422 with what is wrong. Each bound is checked as every date-time a
 * client sends (lib/fields.ts `isDateTime`: ISO 8601 with an offset, 1970 to 9999): `new Date`
 * alone took "Jan 1 2026", year 0 and six-digit years, and PostgreSQL refused the last ones (500).
 */
function parseWindow(body: ReplayRequest): { since: Date; until: Date } {
  const since = new Date(body.since);
  const until = new Date(body.until);
  const errors: Record<string, string[]> = { ...eventTypeErrors(body.event_types ?? []) };
  const notDateTime = "must be an ISO 8601 date-time with offset between 1970 and 9999";
  if (!isDateTime(body.since)) errors.since = [notDateTime];
  if (!isDateTime(body.until)) errors.until = [notDateTime];
  else if (!errors.since && until <= since) errors.until = ["must be after since"];
  else if (!errors.since && until.getTime() - since.getTime() > REPLAY_MAX_WINDOW_DAYS * 86_400_000)
    errors.until = [`must be at most ${REPLAY_MAX_WINDOW_DAYS} days after since`];
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return { since, until };
}

/** The types to read: the requested ones the integration is subscribed to; null for every type. */
function typesToReplay(subscribed: string[], requested: string[] | undefined): EventType[] | null {
  const all = subscribed.includes(ALL_EVENTS);
  if (!requested || requested.includes(ALL_EVENTS)) return all ? null : (subscribed as EventType[]);
  return requested.filter((t) => all || subscribed.includes(t)) as EventType[];
}

/**
 * Sends an integration's events of a window again as new deliveries, each under its event's id
 * (`webhook-id`), so receivers deduplicate. Which events: those of the window the integration
 * gets now (its subscription and mappings, as for live events), limited to `event_types` when
 * given. Replayed deliveries go to their own queue (REPLAY_QUEUE, few at once per process), so a
 * replay never delays live deliveries; one replay per integration at a time (409 while the last
 * one has deliveries not yet tried).
 */
export async function replayWindow(sql: Pool, integration: IntegrationRow, body: ReplayRequest) {
  const window = parseWindow(body);
  if (!integration.is_active) throw invalidState("The integration is inactive; activate it before replaying.");
  if (await hasPendingReplay(sql, integration.id)) throw replayInProgress();
  const types = typesToReplay(integration.event_types, body.event_types);
  const events = types?.length === 0 ? [] : await readEventsCreatedBetween(sql, integration.organization_id, { ...window, types }, REPLAY_MAX_EVENTS + 1);
  if (events.length > REPLAY_MAX_EVENTS)
    throw validationFailed({ until: [`the window holds more than ${REPLAY_MAX_EVENTS} events; replay it in shorter windows`] });
  // Checked again under the integration's row lock: two replays sent at once would both pass the
  // check above, and each queue its deliveries.
  const created = await sql.begin(async (tx) => {
    const [held] = await tx`select 1 from webhook_integrations where id = ${integration.id} for update`;
    if (!held) throw integrationGone();
    if (await hasPendingReplay(tx, integration.id)) throw replayInProgress();
    return createReplayDeliveries(tx, events, integration.id);
  });
  const deliveries = created.length;
  return { deliveries, since: window.since.toISOString(), until: window.until.toISOString(), event_types: types ?? [ALL_EVENTS] };
}

const integrationGone = () => notFound("Webhook integration");

/**
 * A new delivery of the event behind one log record of an integration: its body built again from
 * the event log (the same bytes every delivery of the event carries) under the same `webhook-id`.
 * A successful first attempt keeps no body of its own, so the log is where it is found; an event
 * past the log's retention is not redelivered.
 */
export async function redeliverLog(sql: Pool, integration: Pick<IntegrationRow, "id" | "organization_id" | "is_active">, logId: number) {
  const log = await findLog(sql, integration.id, logId);
  if (!log) throw notFound("Delivery log record");
  // As a replay: an inactive integration is sent nothing until it is activated again.
  if (!integration.is_active) throw invalidState("The integration is inactive; activate it before redelivering.");
  if (log.event_type === event.webhookTest.type) throw invalidState("A test event is not redelivered; send a new one with POST .../test.");
  const at = decodeCursor(log.event_id);
  const found = at && (await readEventAt(sql, integration.organization_id, at));
  if (!found) throw invalidState("The event of this record was removed from the event log by retention; it can no longer be redelivered.");
  const delivery = { event_id: log.event_id, event_type: log.event_type, message_id: log.message_id, body: webhookBody(found) };
  // Deleted since it was found: its deliveries would go with it (their foreign key says so).
  const [created] = await insertDeliveries(sql, [{ webhook_integration_id: integration.id, ...delivery, origin: "redelivery" }], "webhook.delivery").catch(
    (e) => Promise.reject(isForeignKeyViolation(e, "webhook_deliveries_webhook_integration_id_fkey") ? integrationGone() : e),
  );
  return { delivery_id: created!.delivery_id, event_id: log.event_id, event_type: log.event_type };
}
