import { event } from "../events/catalog";
import type { StoredEvent } from "../events/log";
import { randomString } from "../lib/crypto";

/** The id of a test event, which is not in the log; it is also its Standard Webhooks `webhook-id`. */
export const newTestEventId = () => `evt_${randomString(24)}`;

export type EventBody = { id: string; type: string; created_at: string; data: unknown };

/**
 * The body of a log event's deliveries: the event itself under its id (its cursor, also the
 * `webhook-id`), so every delivery of one event carries the same bytes. For `message.received`,
 * `data` also carries the message's fields at its top level, where receivers of the first version
 * read them (`data.text`; deprecated: read `data.message`).
 */
export function webhookBody(e: StoredEvent): string {
  const message = e.payload.message;
  const data = e.type === event.messageReceived.type && message !== null && typeof message === "object" ? { ...message, ...e.payload } : e.payload;
  const body: EventBody = { id: e.cursor, type: e.type, created_at: e.createdAt.toISOString(), data };
  return JSON.stringify(body);
}

export function testEvent(id: string, createdAt: string, integration: { id: number; name: string }): EventBody {
  return {
    id,
    type: event.webhookTest.type,
    created_at: createdAt,
    data: { webhook_integration: { id: integration.id, name: integration.name }, message: "This is a test event from simhost." },
  };
}
