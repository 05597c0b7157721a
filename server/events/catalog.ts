import type { Static, TSchema } from "@sinclair/typebox";
import type { Permission } from "../auth/caller";
import type { NewEvent } from "./log";
import {
  ConfigChangedEvent,
  DeviceEvent,
  MessageCancelEvent,
  MessageEvent,
  MessageSendEvent,
  NumberLockedEvent,
  NumberUnlockedEvent,
  SimDeactivatedEvent,
  SimVerifiedEvent,
  WebhookTestEvent,
} from "./payloads";

/**
 * The event catalog (issue 16, docs/events.md): every event type the log holds, with its payload
 * schema, the realtime event name and channels it is delivered on, and which organizations get a
 * row of it. Each type has a family, which decides the API key permission that reads it
 * (`GET /api/events`, webhooks). No event name or channel string is written anywhere else in the
 * server: publishers build their events with `event.*` below and append them (log.ts).
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
  "message.scheduled",
  "message.queued",
  "message.sending",
  "message.sent",
  "message.delivered",
  "message.failed",
  "message.cancelled",
  "message.expired",
  "message.send",
  "message.send_cancelled",
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

/** The private channels' kinds; a channel's id comes from the event's row (realtime/channels.ts parses the same names). */
export const CHANNEL_KINDS = ["organization", "team", "number", "device"] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];
export const CHANNEL_PREFIX = "private-";

export type EventSpec = {
  payload: TSchema;
  /** The Pusher event name realtime clients bind to; null: not delivered over realtime. */
  realtime: string | null;
  /** Delivered on these channels of the row (a channel whose id the row lacks is skipped), to the row's organization only. */
  channels: readonly ChannelKind[];
  /** Which organizations get a row of it (docs). */
  audience: string;
  /** What raises it (docs). */
  cause: string;
  /** A command to a device, on its channel only: no webhook may subscribe to it (nor is it in the document's webhooks). */
  command?: true;
};

const MESSAGE_AUDIENCE = "every organization that may see the message (message visibility), each with its own team and alias";
const STATUS_AUDIENCE = "the sending organization";
const DEVICE_AUDIENCE = "the device's organization";
const NUMBER_AUDIENCE = "every organization attached to the number";

const status = (s: string) =>
  ({
    payload: MessageEvent,
    realtime: "message.status_changed",
    channels: ["organization", "number"],
    audience: STATUS_AUDIENCE,
    cause: `an outbound message became ${s} (provider send job, provider status callback, device status report, device pick-up timeout)`,
  }) as const;

const device = (realtime: string, cause: string) =>
  ({ payload: DeviceEvent, realtime, channels: ["device", "organization"], audience: DEVICE_AUDIENCE, cause }) as const;

export const CATALOG = {
  "message.received": {
    payload: MessageEvent,
    realtime: "message.received",
    channels: ["organization", "team", "number"],
    audience: MESSAGE_AUDIENCE,
    cause: "an inbound SMS was stored (in the storing transaction, server/messages/fanout.ts `announceInbound`)",
  },
  "message.scheduled": { ...status("scheduled"), cause: "POST /api/messages stored an outbound message with a future send_at" },
  "message.queued": { ...status("queued"), cause: "POST /api/messages stored an outbound message, or a scheduled send's send_at came" },
  "message.sending": status("sending"),
  "message.sent": status("sent"),
  "message.delivered": status("delivered"),
  "message.failed": status("failed"),
  "message.cancelled": { ...status("cancelled"), cause: "POST /api/messages/{id}/cancel cancelled a scheduled or queued send" },
  "message.expired": {
    ...status("expired"),
    cause: "an outbound message's expires_at passed before a device or the provider took it (dispatch, provider send or device pick-up job)",
  },
  "message.send": {
    payload: MessageSendEvent,
    realtime: "message.send",
    channels: ["device"],
    audience: DEVICE_AUDIENCE,
    cause: "the pacer hands a BYOS send to its phone (online, as the sending policy allows): the device is asked to send it",
    command: true,
  },
  "message.send_cancelled": {
    payload: MessageCancelEvent,
    realtime: "message.cancelled",
    channels: ["device"],
    audience: DEVICE_AUDIENCE,
    cause:
      "a BYOS send handed to its phone ended before the phone took it up (cancelled by POST /api/messages/{id}/cancel, expired, past the pick-up timeout, or its phone stopped serving the number): the device is told not to send it",
    command: true,
  },
  "device.online": device("device.status_changed", "a heartbeat from a device marked offline"),
  "device.offline": device("device.status_changed", "the offline deadline passed without a heartbeat"),
  "device.revoked": device("device.status_changed", "DELETE /api/byos/devices/{id} (revocation)"),
  "device.disabled": device("device.updated", "POST /api/byos/devices/{id}/disable"),
  "device.enabled": device("device.updated", "POST /api/byos/devices/{id}/enable"),
  "device.updated": device("device.updated", "a device edit, a SIM card added, moved or deactivated"),
  "sim.verified": {
    payload: SimVerifiedEvent,
    realtime: "sim.verified",
    channels: ["device", "organization"],
    audience: DEVICE_AUDIENCE,
    cause: "the provider callback proved a SIM card's number",
  },
  "sim.deactivated": {
    payload: SimDeactivatedEvent,
    realtime: "sim.deactivated",
    channels: ["device", "organization"],
    audience: DEVICE_AUDIENCE,
    cause: "a SIM card went inactive (deactivated, or missing from 3 heartbeats in a row)",
  },
  "config.changed": {
    payload: ConfigChangedEvent,
    realtime: "config.changed",
    channels: ["device"],
    audience: DEVICE_AUDIENCE,
    cause: "every change that bumps the device's config_version",
  },
  "number.locked": {
    payload: NumberLockedEvent,
    realtime: "number.locked",
    channels: ["number", "organization"],
    audience: `${NUMBER_AUDIENCE}; the full lock for the holder's organization, lock: null for the others`,
    cause: "POST /api/numbers/{id}/lock",
  },
  "number.unlocked": {
    payload: NumberUnlockedEvent,
    realtime: "number.unlocked",
    channels: ["number", "organization"],
    audience: NUMBER_AUDIENCE,
    cause: "unlock (reason unlock), the lock expiry job (expired), a message that released it (released_on_message)",
  },
  "webhook.test": {
    payload: WebhookTestEvent,
    realtime: null,
    channels: [],
    audience: "the integration's organization",
    cause: "POST /api/webhook-integrations/{id}/test, or the team's view of it (sent to that endpoint only, never stored in the log)",
  },
} as const satisfies Record<EventType, EventSpec>;

/** Commands to a device (`command` in the catalog): `message.send` (send an SMS) and `message.send_cancelled` (don't: it was cancelled). */
export const DEVICE_COMMANDS: readonly EventType[] = EVENT_TYPES.filter((t) => (CATALOG[t] as EventSpec).command === true);

/** The types whose payload is the device's state (DeviceEvent). */
export type DeviceStateEventType = { [T in EventType]: (typeof CATALOG)[T]["payload"] extends typeof DeviceEvent ? T : never }[EventType];

export type EventPayload<T extends EventType> = Static<(typeof CATALOG)[T]["payload"]>;

/** Where a row of the log belongs, besides its organization. */
export type EventScope = {
  organizationId: number;
  hostedSimId?: number | null;
  deviceId?: number | null;
  teamId?: number | null;
  /** Appends made by a job that may run twice (log.ts). */
  dedupeKey?: string | null;
};

/** Builds one row of an event type; `type` names it (for SQL that appends rows itself). */
export type EventBuilder<T extends EventType> = ((scope: EventScope, payload: EventPayload<T>) => NewEvent) & { type: T };

function builder<T extends EventType>(type: T): EventBuilder<T> {
  const build = (scope: EventScope, payload: EventPayload<T>): NewEvent => ({ ...scope, type, payload: payload as Record<string, unknown> });
  return Object.assign(build, { type });
}

/** The typed constructors publishers use: `appendEvents(tx, [event.numberLocked(scope, payload)])`. */
export const event = {
  messageReceived: builder("message.received"),
  messageSend: builder("message.send"),
  messageSendCancelled: builder("message.send_cancelled"),
  deviceOnline: builder("device.online"),
  deviceOffline: builder("device.offline"),
  deviceDisabled: builder("device.disabled"),
  deviceEnabled: builder("device.enabled"),
  deviceRevoked: builder("device.revoked"),
  deviceUpdated: builder("device.updated"),
  simVerified: builder("sim.verified"),
  simDeactivated: builder("sim.deactivated"),
  configChanged: builder("config.changed"),
  numberLocked: builder("number.locked"),
  numberUnlocked: builder("number.unlocked"),
  webhookTest: builder("webhook.test"),
};

const STATUS_EVENTS = {
  scheduled: builder("message.scheduled"),
  queued: builder("message.queued"),
  sending: builder("message.sending"),
  sent: builder("message.sent"),
  delivered: builder("message.delivered"),
  failed: builder("message.failed"),
  cancelled: builder("message.cancelled"),
  expired: builder("message.expired"),
};
export type OutboundStatus = keyof typeof STATUS_EVENTS;

/** The event an outbound message's status raises (null for a status that is not one of them). */
export const messageStatusEvent = (status: string) => (status in STATUS_EVENTS ? STATUS_EVENTS[status as OutboundStatus] : null);

/** The realtime channel of one kind and id. */
export const channelName = (kind: ChannelKind, id: number) => `${CHANNEL_PREFIX}${kind}.${id}`;

/** The row fields channels depend on. */
export type EventRow = { type: EventType; organizationId: number; teamId: number | null; hostedSimId: number | null; deviceId: number | null };

function idOf(kind: ChannelKind, e: EventRow): number | null {
  if (kind === "organization") return e.organizationId;
  if (kind === "team") return e.teamId;
  if (kind === "number") return e.hostedSimId;
  return e.deviceId;
}

/** How a row of the log is delivered over realtime: its Pusher event name and channels (none: not delivered). */
export function realtimeOf(e: EventRow): { name: string; channels: string[] } | null {
  const spec: EventSpec = CATALOG[e.type];
  if (!spec.realtime) return null;
  const channels = spec.channels.flatMap((kind) => {
    const id = idOf(kind, e);
    return id === null ? [] : [channelName(kind, id)];
  });
  return { name: spec.realtime, channels };
}
