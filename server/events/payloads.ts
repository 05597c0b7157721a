import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { Message } from "../messages/schema";

/**
 * The payload of every event type (docs/events.md): what realtime clients get as `data` (plus
 * `event_id`), what webhook receivers get as `data`, what `GET /api/events` lists. Shared wire
 * types: the OpenAPI document lists them, clients generate theirs from it.
 */
const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
const Timestamp = Type.String({ format: "date-time" });

export const HostedSimRef = Type.Object({ id: Type.Integer(), number: Type.String(), alias: Nullable(Type.String()) });
export const TeamRef = Type.Object({ id: Type.Integer(), name: Type.String() });

/** A message as one organization sees it: its team there (`message.team_id`, `team`) and its alias of the number. */
export const MessageEvent = Type.Object({
  message: Message,
  hosted_sim: HostedSimRef,
  team: Nullable(TeamRef),
});
export type MessageEvent = Static<typeof MessageEvent>;

/** The device's command to send an outbound SMS (`private-device.{id}` only). */
export const MessageSendEvent = Type.Object({
  message: Type.Object({
    id: Type.Integer(),
    hosted_sim_id: Nullable(Type.Integer()),
    number: Type.String(),
    to: Type.String(),
    text: Type.String(),
    sim_slot: Nullable(Type.Integer()),
  }),
});
export type MessageSendEvent = Static<typeof MessageSendEvent>;

/** The device's command to drop an outbound SMS it was asked to send and that was cancelled (`private-device.{id}` only). */
export const MessageCancelEvent = Type.Object({ message: Type.Object({ id: Type.Integer() }) });
export type MessageCancelEvent = Static<typeof MessageCancelEvent>;

/** One shape for every device event: its state after the change. */
export const DeviceEvent = Type.Object({
  device_id: Type.Integer(),
  organization_id: Type.Integer(),
  status: Type.String({ description: "pending_verification, active, disabled or revoked" }),
  is_online: Type.Boolean(),
  last_seen_at: Nullable(Timestamp),
  changed_at: Timestamp,
  config_version: Type.Integer(),
});
export type DeviceEvent = Static<typeof DeviceEvent>;

const SimCardRef = (status: "active" | "inactive") =>
  Type.Object({
    id: Type.Integer(),
    sim_slot: Nullable(Type.Integer()),
    phone_number: Nullable(Type.String()),
    status: Type.Literal(status),
    hosted_sim_id: Nullable(Type.Integer()),
  });

export const SimVerifiedEvent = Type.Object({
  device_id: Type.Integer(),
  sim_card: SimCardRef("active"),
  hosted_sim_id: Type.Integer(),
  device_status: Type.String(),
});
export type SimVerifiedEvent = Static<typeof SimVerifiedEvent>;

export const SimDeactivatedEvent = Type.Object({
  device_id: Type.Integer(),
  sim_card: SimCardRef("inactive"),
  reason: Type.Union([Type.Literal("missing_from_heartbeats"), Type.Literal("deactivated")]),
});
export type SimDeactivatedEvent = Static<typeof SimDeactivatedEvent>;

export const ConfigChangedEvent = Type.Object({ device_id: Type.Integer(), config_version: Type.Integer() });
export type ConfigChangedEvent = Static<typeof ConfigChangedEvent>;

export const LockDetails = Type.Object({
  organization_id: Type.Integer(),
  team_id: Nullable(Type.Integer()),
  user_id: Nullable(Type.Integer()),
  locked_until: Timestamp,
  release_on_message: Type.Boolean(),
  sender: Nullable(Type.String()),
});

/** `lock` is the full lock for the holder's organization, null for the others sharing the number. */
export const NumberLockedEvent = Type.Object({
  hosted_sim_id: Type.Integer(),
  number: Type.String(),
  locked: Type.Literal(true),
  lock: Nullable(LockDetails),
});
export type NumberLockedEvent = Static<typeof NumberLockedEvent>;

export const UnlockReason = Type.Union([Type.Literal("unlock"), Type.Literal("expired"), Type.Literal("released_on_message")]);
export type UnlockReason = Static<typeof UnlockReason>;

export const NumberUnlockedEvent = Type.Object({
  hosted_sim_id: Type.Integer(),
  number: Type.String(),
  locked: Type.Literal(false),
  lock: Type.Null(),
  reason: UnlockReason,
});
export type NumberUnlockedEvent = Static<typeof NumberUnlockedEvent>;

export const WebhookTestEvent = Type.Object({
  webhook_integration: Type.Object({ id: Type.Integer(), name: Type.String() }),
  message: Type.String(),
});
export type WebhookTestEvent = Static<typeof WebhookTestEvent>;
