import { Type } from "@sinclair/typebox";
import { t } from "elysia";

const Id = { minimum: 1, maximum: Number.MAX_SAFE_INTEGER, multipleOf: 1 };
const E164 = "^\\+[1-9]\\d{6,14}$";

export const MessageParams = t.Object({ id: t.Numeric(Id) });
export const StatusParams = t.Object({ device: t.Numeric(Id), message: t.Numeric(Id) });

export const HistoryQuery = t.Object({
  hosted_sim: t.Numeric(Id),
  per_page: t.Optional(t.Numeric({ minimum: 1, maximum: 100, multipleOf: 1, description: "1 to 100, default 50" })),
  limit: t.Optional(t.Numeric({ minimum: 1, maximum: 100, multipleOf: 1, description: "1 to 100, default 50; per_page wins when both are given" })),
  page: t.Optional(t.Numeric({ minimum: 1, maximum: 10_000_000, multipleOf: 1, description: "at least 1, default 1" })),
  direction: t.Optional(t.Union([t.Literal("inbound"), t.Literal("outbound")])),
  from: t.Optional(t.String({ minLength: 1, maxLength: 20, description: "exact sender" })),
  since: t.Optional(t.String({ format: "date-time", description: "an ISO 8601 date-time (inclusive)" })),
  until: t.Optional(t.String({ format: "date-time", description: "an ISO 8601 date-time (exclusive)" })),
  q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "text contains, case-insensitive" })),
});

export const SendBody = Type.Object({
  hosted_sim: Type.Integer(Id),
  to: Type.String({ pattern: E164, description: "an E.164 phone number" }),
  text: Type.String({ minLength: 1, maxLength: 1600, description: "1 to 1600 characters" }),
});

export const StatusBody = Type.Object({
  status: Type.Union([Type.Literal("sending"), Type.Literal("sent"), Type.Literal("delivered"), Type.Literal("failed")]),
  error: Type.Optional(Type.String({ maxLength: 1000 })),
});

const Timestamp = t.String({ format: "date-time" });
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()]);
export const Message = t.Object({
  id: t.Integer(),
  hosted_sim_id: Nullable(t.Integer()),
  number: t.String(),
  direction: t.Union([t.Literal("inbound"), t.Literal("outbound")]),
  from: t.String(),
  to: t.String(),
  text: t.String(),
  status: t.String({ description: "received; or queued, sending, sent, delivered, failed" }),
  source: t.Union([t.Literal("provider"), t.Literal("device"), t.Literal("api")]),
  device_id: Nullable(t.Integer()),
  sim_slot: Nullable(t.Integer()),
  external_id: Nullable(t.String()),
  team_id: Nullable(t.Integer()),
  locked: t.Boolean(),
  error: Nullable(t.String()),
  received_at: Nullable(Timestamp),
  sent_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const MessageData = t.Object({ data: Message });
export const MessagePage = t.Object({
  data: t.Array(Message),
  meta: t.Object({
    current_page: t.Integer(),
    per_page: t.Integer(),
    total: t.Integer(),
    last_page: t.Integer(),
    from: Nullable(t.Integer()),
    to: Nullable(t.Integer()),
    path: t.String(),
  }),
  links: t.Object({ first: t.String(), last: t.String(), prev: Nullable(t.String()), next: Nullable(t.String()) }),
});
