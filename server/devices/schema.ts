import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { t } from "elysia";
import { ErrorBody } from "../errors";
import { DateTime, IdParam, IntegerParam, Optional, Text } from "../lib/fields";
import { PageOf } from "../lib/pagination";

const E164_PATTERN = "^\\+[1-9]\\d{6,14}$";
const e164 = new RegExp(E164_PATTERN);
/** Whether a sender is a phone number in E.164 form (API.md §0), not an alphanumeric sender id or a short code. */
export const isE164 = (text: string) => e164.test(text);
const Percent = Type.Integer({ minimum: 0, maximum: 100 });
const Timestamp = Type.String({ format: "date-time" });
const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);

export const DeviceParams = t.Object({ device: IdParam() });
export const SimCardParams = t.Object({ device: IdParam(), simCard: IdParam() });
export const DeviceListQuery = t.Object({
  status: t.Optional(t.Union([t.Literal("active"), t.Literal("disabled"), t.Literal("revoked"), t.Literal("pending_verification")])),
  per_page: t.Optional(IntegerParam(1, 100, { description: "1 to 100, default 15" })),
  page: t.Optional(IntegerParam(1, 1_000_000, { description: "at least 1, default 1" })),
});

export const RegisterDevice = Type.Object({
  android_id: Type.String({ pattern: "^[0-9a-fA-F]{16}$", description: "16 hexadecimal characters" }),
  sim_slots: Type.Array(Type.Integer({ minimum: 1, maximum: 2 }), { minItems: 1, maxItems: 10, uniqueItems: true }),
  device_model: Text({ minLength: 1, maxLength: 100 }),
  app_version: Text({ minLength: 1, maxLength: 50 }),
  device_name: Optional(Text({ maxLength: 255 }), "absent"),
});
export type RegisterDevice = Static<typeof RegisterDevice>;

const ClaimedNumber = (whose: string) =>
  Type.String({
    pattern: E164_PATTERN,
    description: `${whose} number to verify: a different number gets a fresh code that only an SMS from that number can prove; the current number stays until then`,
  });

export const UpdateDevice = Type.Object({
  device_name: Optional(Text({ maxLength: 255, description: "an empty string clears the name" }), "absent"),
  phone_number: Optional(ClaimedNumber("the primary SIM card's"), "absent"),
  app_version: Optional(Text({ minLength: 1, maxLength: 50 }), "absent"),
});
export type UpdateDevice = Static<typeof UpdateDevice>;

export const Heartbeat = Type.Object({
  battery_level: Optional(Percent, "absent"),
  signal_strength: Optional(Percent, "absent"),
  is_in_doze_mode: Optional(Type.Boolean({ default: false }), "absent"),
  sim_cards: Optional(Type.Array(Type.Object({ phone_number: Text({ maxLength: 20 }), signal_strength: Percent }), { maxItems: 10 }), "absent"),
});
export type Heartbeat = Static<typeof Heartbeat>;

/** A `message_id` as stored and compared: lower case, without the `urn:uuid:` prefix the uuid format allows (PostgreSQL's uuid takes neither form's prefix). */
export const canonicalUuid = (id: string) => id.toLowerCase().replace(/^urn:uuid:/, "");

export const SubmitSms = Type.Object({
  from: Text({ minLength: 1, maxLength: 20 }),
  body: Text({ maxLength: 1600, description: "at most 1600 characters (Unicode code points)" }),
  message_id: Type.String({ format: "uuid", description: "a UUID" }),
  received_at: Optional(DateTime(), "absent"),
  sim_slot: Optional(Type.Integer({ minimum: 1, maximum: 2 }), "absent"),
});
export type SubmitSms = Static<typeof SubmitSms>;

export const AddSimCard = Type.Object({ sim_slot: Type.Integer({ minimum: 1, maximum: 10 }) });
export const UpdateSimCard = Type.Object({
  phone_number: Optional(ClaimedNumber("the SIM card's"), "absent"),
  sim_slot: Optional(Type.Integer({ minimum: 1, maximum: 10 }), "clears"),
});
export type UpdateSimCard = Static<typeof UpdateSimCard>;

/**
 * The answers of a PATCH that may claim a phone_number (docs/api-notes.md "Numbers change only by
 * proof"): 409 number_in_use (active on another SIM card, or a pool number) or invalid_state, 422
 * also for the provider's own number.
 */
export const numberClaimAnswers = <T extends TSchema>(ok: T) => ({ 200: ok, 409: ErrorBody, 422: ErrorBody });
export const SimCard = Type.Object({
  id: Type.Integer(),
  phone_number: Nullable(Type.String({ description: "the proven number; null until a verification SMS came from it" })),
  pending_phone_number: Nullable(
    Type.String({ description: "a number asked for by PATCH phone_number, taken only when an SMS from it carries the card's code" }),
  ),
  sim_slot: Type.Union([Type.Integer(), Type.Null()]),
  status: Type.String(),
  signal_strength: Type.Union([Type.Integer(), Type.Null()]),
  is_active: Type.Boolean(),
  hosted_sim_id: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  verification_code: Type.Optional(Type.String({ description: "only in the answer of the PATCH that claimed pending_phone_number" })),
  provider_number: Type.Optional(Type.String()),
  code_expires_at: Type.Optional(Timestamp),
});

export const IssuedSimCard = Type.Object({
  id: Type.Integer(),
  sim_slot: Type.Union([Type.Integer(), Type.Null()]),
  phone_number: Type.Null(),
  status: Type.String(),
  verification_code: Type.String(),
  provider_number: Type.String(),
  code_expires_at: Timestamp,
});

const deviceFields = {
  id: Type.Integer(),
  android_id: Type.String(),
  phone_number: Nullable(Type.String()),
  device_name: Nullable(Type.String()),
  status: Type.String(),
  is_online: Type.Boolean(),
  provider_number: Type.String(),
  sim_cards: Type.Array(SimCard),
  battery_level: Type.Union([Type.Integer(), Type.Null()]),
  last_seen_at: Nullable(Timestamp),
  created_at: Timestamp,
};
export const DeviceSummary = Type.Object(deviceFields);
/** The device list (documented only: SPEC.md 4.2 with API.md §0's pagination). */
// Each device names its organization: the list spans every organization of the caller.
export const DevicePage = PageOf(Type.Object({ ...deviceFields, organization: Type.Object({ id: Type.Integer(), name: Type.String() }) }));
export const DeviceDetail = Type.Object({
  ...deviceFields,
  device_model: Type.String(),
  app_version: Type.String(),
  config_version: Type.Integer(),
  messages_received_count: Type.Integer(),
  organization: Type.Object({ id: Type.Integer(), name: Type.String() }),
  updated_at: Timestamp,
});

export const DeviceConfig = Type.Object({
  device: Type.Object({ id: Type.Integer(), phone_number: Nullable(Type.String()), status: Type.String() }),
  intervals: Type.Object({ heartbeat_seconds: Type.Integer(), config_refresh_seconds: Type.Integer(), retry_backoff_seconds: Type.Array(Type.Integer()) }),
  limits: Type.Object({
    max_devices: Type.Integer(),
    current_devices: Type.Integer(),
    monthly_messages: Type.Integer(),
    current_month_messages: Type.Integer(),
    remaining_messages: Type.Integer(),
  }),
  features: Type.Object({ compression: Type.Boolean(), priority_support: Type.Boolean(), debug_mode: Type.Boolean() }),
  metadata: Type.Object({ config_version: Type.Integer(), server_time: Timestamp, plan_name: Type.String() }),
});

export const HeartbeatAnswer = Type.Object({ success: Type.Boolean(), next_heartbeat_in: Type.Integer(), server_time: Timestamp });
export const SmsAccepted = Type.Object({ message: Type.String(), message_id: Type.String() });

/** The register answer (SPEC.md 4.2): the device's fields at the top level, its cards with their codes. */
export const Registered = Type.Object({
  ...DeviceSummary.properties,
  device_model: Type.String(),
  app_version: Type.String(),
  sim_cards: Type.Array(IssuedSimCard),
});
/** v1 also repeats them under `data`, deprecated (CHANGELOG.md "deprecated-register-data"); v2 answers Registered alone. */
export const RegisteredV1 = Type.Object({
  ...Registered.properties,
  data: Type.Object(Registered.properties, {
    deprecated: true,
    description: "Deprecated: the same fields as the top level. Read the top level; API v2 (/api/v2/byos/devices/register) leaves data out.",
  }),
});
