import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { t } from "elysia";

const DateTime = t.String({ format: "date-time" });
const Id = { minimum: 1, maximum: Number.MAX_SAFE_INTEGER };

export const ForwardingMode = Type.Union([Type.Literal("always"), Type.Literal("lock_required")]);
export const DeliveryStatus = Type.Union([Type.Literal("pending"), Type.Literal("succeeded"), Type.Literal("failed"), Type.Literal("retrying")]);

const Name = Type.String({ minLength: 1, maxLength: 255 });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: "an http or https URL" });
/** Custom headers: names and values are checked further by the routes (token names, no line breaks, reserved names). */
const Headers = Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 4096 }), { maxProperties: 50 });
const Timeout = Type.Integer({ minimum: 1, maximum: 120, default: 30, description: "seconds per attempt, 1 to 120" });
const Retries = Type.Integer({ minimum: 0, maximum: 10, default: 3, description: "retries after the first attempt, 0 to 10" });

export const IntegrationCreateBody = Type.Object({
  name: Name,
  url: Url,
  headers: Type.Optional(Headers),
  timeout_seconds: Type.Optional(Timeout),
  retry_count: Type.Optional(Retries),
});
export type IntegrationCreateBody = Static<typeof IntegrationCreateBody>;

export const IntegrationUpdateBody = Type.Object({
  name: Name,
  url: Url,
  headers: Type.Optional(Headers),
  timeout_seconds: Type.Optional(Timeout),
  retry_count: Type.Optional(Retries),
  is_active: Type.Optional(Type.Boolean()),
});
export type IntegrationUpdateBody = Static<typeof IntegrationUpdateBody>;

/** The team view: an integration and its mapping to the team in one step. */
export const TeamWebhookCreateBody = Type.Object({ ...IntegrationCreateBody.properties, forwarding_mode: Type.Optional(ForwardingMode) });
export const TeamWebhookUpdateBody = Type.Object({ ...IntegrationUpdateBody.properties, forwarding_mode: Type.Optional(ForwardingMode) });

export const MappingCreateBody = Type.Object({ team_id: Type.Integer(Id), forwarding_mode: ForwardingMode });
export const MappingUpdateBody = Type.Object({ forwarding_mode: ForwardingMode, is_active: Type.Optional(Type.Boolean()) });

export const IntegrationParams = t.Object({ webhook_integration: t.Integer(Id) });
export const MappingParams = t.Object({ webhook_integration: t.Integer(Id), webhook_mapping: t.Integer(Id) });
export const TeamParams = t.Object({ team: t.Integer(Id) });
export const TeamWebhookParams = t.Object({ team: t.Integer(Id), webhook: t.Integer(Id) });

export const LogsQuery = t.Object({
  status: t.Optional(DeliveryStatus),
  per_page: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  page: t.Optional(t.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
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
const Link = Type.Union([Type.String(), Type.Null()]);
export const LogPage = Type.Object({
  data: Type.Array(LogEntry),
  meta: Type.Object({
    current_page: Type.Integer(),
    per_page: Type.Integer(),
    total: Type.Integer(),
    last_page: Type.Integer(),
    from: Type.Union([Type.Integer(), Type.Null()]),
    to: Type.Union([Type.Integer(), Type.Null()]),
    path: Type.String(),
  }),
  links: Type.Object({ first: Link, last: Link, prev: Link, next: Link }),
});
