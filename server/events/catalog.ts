import type { Permission } from "../auth/caller";

/**
 * The event catalog (issue 16, docs/events.md): every event type the log holds. Each type has a
 * family, which decides the API key permission that reads it (`GET /api/events`, webhooks).
 * Payload schemas, realtime names and channels are declared here too, so that no event name or
 * channel string is written anywhere else in the server.
 */
export const EVENT_FAMILIES = {
  message: "messages.read",
  number: "numbers.read",
  device: "numbers.read",
  sim: "numbers.read",
  config: "numbers.read",
  webhook: "webhooks.receive",
} as const satisfies Record<string, Permission>;

export type EventFamily = keyof typeof EVENT_FAMILIES;

export const EVENT_TYPES = [
  "message.received",
  "message.queued",
  "message.sending",
  "message.sent",
  "message.delivered",
  "message.failed",
  "message.send",
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
  "webhook.test",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (t: string): t is EventType => (EVENT_TYPES as readonly string[]).includes(t);

export const familyOf = (t: EventType) => t.slice(0, t.indexOf(".")) as EventFamily;

/** The permission an API key needs to read events of this type. */
export const permissionFor = (t: EventType): Permission => EVENT_FAMILIES[familyOf(t)];
