import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { t } from "elysia";
import { Id, IdParam, IntegerParam, Optional, Text } from "../lib/fields";
import { PageOf } from "../lib/pagination";
import { DEFAULT_EVENT_TYPES } from "./subscriptions";

const DateTime = t.String({ format: "date-time" });

export const ForwardingMode = Type.Union([Type.Literal("always"), Type.Literal("lock_required")]);
export const DeliveryStatus = Type.Union([Type.Literal("pending"), Type.Literal("succeeded"), Type.Literal("failed"), Type.Literal("retrying")]);

const Name = Text({ minLength: 1, maxLength: 255 });
const Url = Text({ minLength: 1, maxLength: 2048, description: "an http or https URL" });
/** Custom headers: names and values are checked further by the routes (webhooks/input.ts: token names of at most 256 characters, printable ASCII values, no reserved or hop-by-hop names). */
const Headers = Type.Record(Type.String({ maxLength: 256 }), Text({ maxLength: 4096 }), {
  maxProperties: 50,
  description: "at most 50 headers; values are shown to admins and owners only, masked as ******** for members and API keys",
});
// No schema `default`: Elysia fills it into a body that leaves the field out, and an update (PATCH)
// leaving them out reset them to 30 and 3 instead of keeping them (integrationFields applies the defaults on create).
const Timeout = Type.Integer({ minimum: 1, maximum: 120, description: "seconds per attempt, 1 to 120 (default 30; an update without it keeps the value)" });
const Retries = Type.Integer({
  minimum: 0,
  maximum: 10,
  description: "retries after the first attempt, 0 to 10 (default 3; an update without it keeps the value)",
});
const EventTypes = Type.Array(Type.String({ maxLength: 64 }), {
  minItems: 1,
  maxItems: 64,
  description: `event types delivered to this integration (docs/events.md "Webhooks"), or ["*"] for every type; default ${JSON.stringify(DEFAULT_EVENT_TYPES)}. Message events follow the team mappings; device, SIM and number events go to every subscribed integration of the organization.`,
});

export const IntegrationCreateBody = Type.Object({
  name: Name,
  url: Url,
  headers: Optional(Headers, "absent"),
  timeout_seconds: Optional(Timeout, "absent"),
  retry_count: Optional(Retries, "absent"),
  event_types: Optional(EventTypes, "absent"),
});
export type IntegrationCreateBody = Static<typeof IntegrationCreateBody>;

export const IntegrationUpdateBody = Type.Object({ ...IntegrationCreateBody.properties, is_active: Optional(Type.Boolean(), "absent") });
export type IntegrationUpdateBody = Static<typeof IntegrationUpdateBody>;

/** The team view: an integration and its mapping to the team in one step. */
export const TeamWebhookCreateBody = Type.Object({ ...IntegrationCreateBody.properties, forwarding_mode: Optional(ForwardingMode, "absent") });
export const TeamWebhookUpdateBody = Type.Object({ ...IntegrationUpdateBody.properties, forwarding_mode: Optional(ForwardingMode, "absent") });

export const MappingCreateBody = Type.Object({ team_id: Id(), forwarding_mode: ForwardingMode });
export const MappingUpdateBody = Type.Object({ forwarding_mode: ForwardingMode, is_active: Optional(Type.Boolean(), "absent") });

export const IntegrationParams = t.Object({ webhook_integration: IdParam() });
export const MappingParams = t.Object({ webhook_integration: IdParam(), webhook_mapping: IdParam() });
export const TeamParams = t.Object({ team: IdParam() });
export const TeamWebhookParams = t.Object({ team: IdParam(), webhook: IdParam() });
export const LogParams = t.Object({ webhook_integration: IdParam(), log: IdParam() });
export const TeamLogParams = t.Object({ team: IdParam(), webhook: IdParam(), log: IdParam() });

export const ReplayBody = Type.Object({
  since: Text({ maxLength: 64, description: "start of the window (ISO 8601), included" }),
  until: Text({ maxLength: 64, description: "end of the window (ISO 8601), excluded; at most 7 days after since" }),
  event_types: Optional(EventTypes, "absent"),
});

export const LogsQuery = t.Object({
  status: t.Optional(DeliveryStatus),
  per_page: t.Optional(IntegerParam(1, 100, { description: "1 to 100, default 50" })),
  page: t.Optional(IntegerParam(1, 1_000_000, { description: "at least 1, default 1" })),
});

export const Mapping = Type.Object({
  id: Type.Integer(),
  team_id: Type.Integer(),
  team_name: Type.String(),
  forwarding_mode: ForwardingMode,
  is_active: Type.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
});

const integrationFields = {
  id: Type.Integer(),
  name: Type.String(),
  url: Type.String(),
  has_secret: Type.Boolean(),
  headers: Type.Record(Type.String(), Type.String()),
  timeout_seconds: Type.Integer(),
  retry_count: Type.Integer(),
  event_types: Type.Array(Type.String(), { description: 'subscribed event types; ["*"] for every type' }),
  is_active: Type.Boolean(),
  mappings: Type.Array(Mapping),
  created_at: DateTime,
  updated_at: DateTime,
};
export const Integration = Type.Object(integrationFields);
export const IntegrationWithSecret = Type.Object({ ...integrationFields, secret: Type.String({ description: "whsec_ signing secret, shown only now" }) });

const Message = Type.String();
export const IntegrationList = Type.Object({ data: Type.Array(Integration), organization: Type.Object({ id: Type.Integer(), name: Type.String() }) });
export const IntegrationData = Type.Object({ data: Integration });
export const IntegrationCreated = Type.Object({ message: Message, data: IntegrationWithSecret });
export const IntegrationUpdated = Type.Object({ message: Message, data: Integration });
export const MessageOnly = Type.Object({ message: Message });
export const SecretRegenerated = Type.Object({
  message: Message,
  data: Type.Object({ id: Type.Integer(), name: Type.String(), secret: Type.String(), updated_at: DateTime }),
});
export const TeamIntegrationList = Type.Object({ data: Type.Array(Integration), team: Type.Object({ id: Type.Integer(), name: Type.String() }) });

export const MappingList = Type.Object({ data: Type.Array(Mapping), webhook_integration: Type.Object({ id: Type.Integer(), name: Type.String() }) });
export const MappingData = Type.Object({ data: Mapping });
export const MappingChanged = Type.Object({ message: Message, data: Mapping });

export const TestOutcome = Type.Object({
  success: Type.Boolean(),
  http_status: Type.Integer({ description: "the receiver's status code; 0 when no answer arrived" }),
  response_body: Type.String({ description: "first 4 KiB of the answer" }),
  response_time_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()], { description: "why it failed (timeout, connection refused, non-2xx ...)" }),
});

export const RedeliveryQueued = Type.Object({
  message: Type.String(),
  data: Type.Object({
    delivery_id: Type.Integer({ description: "the new delivery; its attempts appear in the log" }),
    event_id: Type.String({ description: "the event's id, also the webhook-id: the same as the delivery redelivered" }),
    event_type: Type.String(),
  }),
});
export const ReplayQueued = Type.Object({
  message: Type.String(),
  data: Type.Object({
    deliveries: Type.Integer({ description: "deliveries created, one per event of the window the integration gets" }),
    since: DateTime,
    until: DateTime,
    event_types: Type.Array(Type.String(), { description: 'the types replayed: those requested that the integration is subscribed to; ["*"] for all' }),
  }),
});

const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
export const LogEntry = Type.Object({
  id: Type.Integer(),
  webhook_integration_id: Type.Integer(),
  event_id: Type.String({ description: "also the webhook-id header; the same on every attempt" }),
  event_type: Type.String(),
  message_id: Nullable(Type.Integer()),
  attempt: Type.Integer(),
  status: DeliveryStatus,
  http_status: Nullable(Type.Integer()),
  response_body: Nullable(Type.String()),
  response_time_ms: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  next_retry_at: Type.Union([DateTime, Type.Null()]),
  created_at: DateTime,
});
export const LogPage = PageOf(LogEntry);
