import { Kind, Type, TypeRegistry } from "@sinclair/typebox";
import { t } from "elysia";
import { DateTime, ID_MAX, Id, IdParam, IntegerParam, isDateTime, Optional, Text } from "../lib/fields";
import { PageOf } from "../lib/pagination";

const E164 = "^\\+[1-9]\\d{6,14}$";

export const MessageParams = t.Object({ id: IdParam() });
export const StatusParams = t.Object({ device: IdParam(), message: IdParam() });

export const HistoryQuery = t.Object({
  hosted_sim: IdParam(),
  per_page: t.Optional(IntegerParam(1, 100, { description: "1 to 100, default 50" })),
  limit: t.Optional(IntegerParam(1, 100, { description: "1 to 100, default 50; per_page wins when both are given" })),
  page: t.Optional(IntegerParam(1, 10_000_000, { description: "at least 1, default 1" })),
  direction: t.Optional(t.Union([t.Literal("inbound"), t.Literal("outbound")])),
  from: t.Optional(Text({ minLength: 1, maxLength: 20, description: "exact sender" })),
  since: t.Optional(DateTime("inclusive")),
  until: t.Optional(DateTime("exclusive")),
  q: t.Optional(Text({ minLength: 1, maxLength: 200, description: "text contains, case-insensitive" })),
  has_code: t.Optional(
    t.Union([t.Literal("true"), t.Literal("false")], {
      description: "true: only messages carrying a one-time code (`code` not null); false: only those without",
    }),
  ),
});

const MESSAGE_ID = /^(0|[1-9][0-9]{0,15})$/;
/** `after` of a wait: a message id (0: from the first message) or a date-time (server/lib/fields.ts `isDateTime`). */
export const isWaitStart = (value: unknown): value is string =>
  typeof value === "string" && ((MESSAGE_ID.test(value) && Number(value) <= ID_MAX) || isDateTime(value));
TypeRegistry.Set("WaitStart", (_schema, value) => isWaitStart(value));

export const NextParams = t.Object({ id: IdParam() });
export const NextQuery = t.Object({
  after: t.Optional(
    Type.Unsafe<string>({
      [Kind]: "WaitStart",
      type: "string",
      errorMessage: "must be a message id or an ISO 8601 date-time",
      description:
        "a message id (messages with a higher id: stored later) or an ISO 8601 date-time (messages received after it); default: the call's start, so a message stored before the call is not returned",
    }),
  ),
  from: t.Optional(Text({ minLength: 1, maxLength: 20, description: "exact sender" })),
  contains: t.Optional(Text({ minLength: 1, maxLength: 200, description: "text contains, case-insensitive" })),
  has_code: HistoryQuery.properties.has_code,
  timeout: t.Optional(IntegerParam(1, 120, { description: "seconds to wait, 1 to 120, default 30" })),
});

export const SendBody = Type.Object({
  hosted_sim: Id(),
  to: Type.String({ pattern: E164, description: "an E.164 phone number" }),
  text: Text({ minLength: 1, maxLength: 1600, description: "1 to 1600 characters (Unicode code points)" }),
});

export const StatusBody = Type.Object({
  status: Type.Union([Type.Literal("sending"), Type.Literal("sent"), Type.Literal("delivered"), Type.Literal("failed")]),
  error: Optional(Text({ maxLength: 1000 }), "absent"),
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
  code: Nullable(
    t.String({
      description:
        "the one-time code an inbound message carries (digits without separators, letter-prefixed and alphanumeric codes as shown), extracted when it is stored; null when none, and for outbound messages",
    }),
  ),
  received_at: Nullable(Timestamp),
  sent_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const MessageData = t.Object({ data: Message });
export const MessagePage = PageOf(Message);
export const NextMessageData = t.Object({
  data: t.Union([Message, t.Null()], { description: "the first matching message, or null when none arrived within the timeout" }),
});
