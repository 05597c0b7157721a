import { type Static, Type } from "@sinclair/typebox";
import { t } from "elysia";

const E164 = Type.String({ pattern: "^\\+[1-9]\\d{6,14}$", description: "an E.164 phone number such as +14155550100" });
const Percent = Type.Integer({ minimum: 0, maximum: 100 });
const Timestamp = Type.String({ format: "date-time" });
const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);

export const DeviceParams = t.Object({ device: t.Numeric({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) });
export const SimCardParams = t.Object({
  device: t.Numeric({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  simCard: t.Numeric({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
});
export const DeviceListQuery = t.Object({
  status: t.Optional(t.Union([t.Literal("active"), t.Literal("disabled"), t.Literal("revoked"), t.Literal("pending_verification")])),
  per_page: t.Optional(t.Numeric({ minimum: 1, maximum: 100, default: 15 })),
  page: t.Optional(t.Numeric({ minimum: 1, maximum: 1_000_000, default: 1 })),
});

export const RegisterDevice = Type.Object({
  android_id: Type.String({ pattern: "^[0-9a-fA-F]{16}$", description: "16 hexadecimal characters" }),
  sim_slots: Type.Array(Type.Integer({ minimum: 1, maximum: 2 }), { minItems: 1, maxItems: 10, uniqueItems: true }),
  device_model: Type.String({ minLength: 1, maxLength: 100 }),
  app_version: Type.String({ minLength: 1, maxLength: 50 }),
  device_name: Type.Optional(Type.String({ maxLength: 255 })),
});
export type RegisterDevice = Static<typeof RegisterDevice>;

export const UpdateDevice = Type.Object({
  device_name: Type.Optional(Type.String({ maxLength: 255 })),
  phone_number: Type.Optional(E164),
  app_version: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
});
export type UpdateDevice = Static<typeof UpdateDevice>;

export const Heartbeat = Type.Object({
  battery_level: Type.Optional(Percent),
  signal_strength: Type.Optional(Percent),
  is_in_doze_mode: Type.Optional(Type.Boolean({ default: false })),
  sim_cards: Type.Optional(Type.Array(Type.Object({ phone_number: Type.String({ maxLength: 20 }), signal_strength: Percent }), { maxItems: 10 })),
});
export type Heartbeat = Static<typeof Heartbeat>;

export const SubmitSms = Type.Object({
  from: Type.String({ minLength: 1, maxLength: 20 }),
  body: Type.String({ maxLength: 1600 }),
  message_id: Type.String({ format: "uuid", description: "a UUID" }),
  received_at: Type.Optional(Timestamp),
  sim_slot: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 })),
});
export type SubmitSms = Static<typeof SubmitSms>;

export const AddSimCard = Type.Object({ sim_slot: Type.Integer({ minimum: 1, maximum: 10 }) });
export const UpdateSimCard = Type.Object({
  phone_number: Type.Optional(E164),
  sim_slot: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 10 }), Type.Null()])),
});
export type UpdateSimCard = Static<typeof UpdateSimCard>;

export const SimCard = Type.Object({
  id: Type.Integer(),
  phone_number: Nullable(Type.String()),
  sim_slot: Type.Union([Type.Integer(), Type.Null()]),
  status: Type.String(),
  signal_strength: Type.Union([Type.Integer(), Type.Null()]),
  is_active: Type.Boolean(),
  hosted_sim_id: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
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
