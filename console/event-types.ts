/**
 * Event types a webhook can subscribe to (server/webhooks/subscriptions.ts SUBSCRIBABLE, from
 * server/events/catalog.ts), without `webhook.test`: test deliveries reach every integration.
 * The server is the judge (422 on an unknown name); test/e2e/console-webhooks.test.ts checks this
 * list against the catalog.
 */
export const WEBHOOK_EVENT_TYPES = [
  "message.received",
  "message.scheduled",
  "message.queued",
  "message.sending",
  "message.sent",
  "message.delivered",
  "message.failed",
  "message.cancelled",
  "message.expired",
  "device.online",
  "device.offline",
  "device.disabled",
  "device.enabled",
  "device.revoked",
  "device.updated",
  "sim.verified",
  "sim.deactivated",
  "config.changed",
  "number.locked",
  "number.unlocked",
] as const;

export const ALL_EVENTS = "*";
export const DEFAULT_EVENT_TYPES = ["message.received"];

/** How a list of subscribed types reads: "all events" for ["*"]. */
export function describeEventTypes(types: string[]): string {
  if (types.includes(ALL_EVENTS)) return "all events";
  return types.length === 0 ? "none" : types.join(", ");
}
