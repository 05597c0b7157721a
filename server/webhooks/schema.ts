import { type Static, Type } from "@sinclair/typebox";
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

export const Mapping = t.Object({
  id: t.Integer(),
  team_id: t.Integer(),
  team_name: t.String(),
  forwarding_mode: ForwardingMode,
  is_active: t.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
});

const integrationFields = {
  id: t.Integer(),
  name: t.String(),
  url: t.String(),
  has_secret: t.Boolean(),
  headers: t.Record(t.String(), t.String()),
  timeout_seconds: t.Integer(),
  retry_count: t.Integer(),
  is_active: t.Boolean(),
  mappings: t.Array(Mapping),
  created_at: DateTime,
  updated_at: DateTime,
};
export const Integration = t.Object(integrationFields);
export const IntegrationWithSecret = t.Object({ ...integrationFields, secret: t.String({ description: "whsec_ signing secret, shown only now" }) });

const Message = t.String();
export const IntegrationList = t.Object({ data: t.Array(Integration), organization: t.Object({ id: t.Integer(), name: t.String() }) });
export const IntegrationData = t.Object({ data: Integration });
export const IntegrationCreated = t.Object({ message: Message, data: IntegrationWithSecret });
export const IntegrationUpdated = t.Object({ message: Message, data: Integration });
export const MessageOnly = t.Object({ message: Message });
export const SecretRegenerated = t.Object({
  message: Message,
  data: t.Object({ id: t.Integer(), name: t.String(), secret: t.String(), updated_at: DateTime }),
});
export const TeamIntegrationList = t.Object({ data: t.Array(Integration), team: t.Object({ id: t.Integer(), name: t.String() }) });

export const MappingList = t.Object({ data: t.Array(Mapping), webhook_integration: t.Object({ id: t.Integer(), name: t.String() }) });
export const MappingData = t.Object({ data: Mapping });
export const MappingChanged = t.Object({ message: Message, data: Mapping });

export const TestOutcome = t.Object({
  success: t.Boolean(),
  http_status: t.Integer({ description: "the receiver's status code; 0 when no answer arrived" }),
  response_body: t.String({ description: "first 4 KiB of the answer" }),
  response_time_ms: t.Integer(),
  error: t.Union([t.String(), t.Null()], { description: "why it failed (timeout, connection refused, non-2xx ...)" }),
});

const Nullable = <T extends ReturnType<typeof t.Integer> | ReturnType<typeof t.String>>(s: T) => t.Union([s, t.Null()]);
export const LogEntry = t.Object({
  id: t.Integer(),
  webhook_integration_id: t.Integer(),
  event_id: t.String({ description: "also the webhook-id header; the same on every attempt" }),
  event_type: t.String(),
  message_id: Nullable(t.Integer()),
  attempt: t.Integer(),
  status: DeliveryStatus,
  http_status: Nullable(t.Integer()),
  response_body: Nullable(t.String()),
  response_time_ms: Nullable(t.Integer()),
  error: Nullable(t.String()),
  next_retry_at: t.Union([DateTime, t.Null()]),
  created_at: DateTime,
});
const Link = t.Union([t.String(), t.Null()]);
export const LogPage = t.Object({
  data: t.Array(LogEntry),
  meta: t.Object({
    current_page: t.Integer(),
    per_page: t.Integer(),
    total: t.Integer(),
    last_page: t.Integer(),
    from: t.Union([t.Integer(), t.Null()]),
    to: t.Union([t.Integer(), t.Null()]),
    path: t.String(),
  }),
  links: t.Object({ first: Link, last: Link, prev: Link, next: Link }),
});
