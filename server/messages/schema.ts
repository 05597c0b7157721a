import { Kind, Type, TypeRegistry } from "@sinclair/typebox";
import { t } from "elysia";
import { DateTime, ID_MAX, Id, IdParam, IntegerParam, isDateTime, Optional, Text } from "../lib/fields";
import { PageOf } from "../lib/pagination";

const E164 = "^\\+[1-9]\\d{6,14}$";

export const MessageParams = t.Object({ id: IdParam() });
export const StatusParams = t.Object({ device: IdParam(), message: IdParam() });

const UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
export const BatchId = (description: string) => t.String({ pattern: UUID, description, errorMessage: "must be a batch id (a UUID)" });

export const HistoryQuery = t.Object({
  hosted_sim: t.Optional({ ...IdParam(), description: "the number whose history to list; required unless `batch` is given" }),
  batch: t.Optional(
    BatchId(
      "list the messages of one bulk send (its `batch_id`) in recipient order instead of a number's history; not combined with `hosted_sim` or the other filters",
    ),
  ),
  per_page: t.Optional(IntegerParam(1, 100, { description: "1 to 100, default 50" })),
  limit: t.Optional(IntegerParam(1, 100, { description: "1 to 100, default 50; per_page wins when both are given" })),
  page: t.Optional(IntegerParam(1, 10_000_000, { description: "at least 1, default 1" })),
  direction: t.Optional(t.Union([t.Literal("inbound"), t.Literal("outbound")])),
  from: t.Optional(Text({ minLength: 1, maxLength: 20, description: "the sender, letter case ignored" })),
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
  from: t.Optional(Text({ minLength: 1, maxLength: 20, description: "the sender, letter case ignored" })),
  contains: t.Optional(Text({ minLength: 1, maxLength: 200, description: "text contains, case-insensitive" })),
  has_code: HistoryQuery.properties.has_code,
  timeout: t.Optional(IntegerParam(1, 120, { description: "seconds to wait, 1 to 120, default 30" })),
});

const Recipient = Type.String({ pattern: E164, description: "an E.164 phone number" });
/** A bulk send's variable name, as the text uses it in `{{name}}` (send-request.ts checks the names the schema lets through). */
export const VarName = "^[A-Za-z_][A-Za-z0-9_]{0,63}$";
export const SendBody = Type.Object({
  hosted_sim: Optional({ ...Id(), description: "the number to send from; give it or `hosted_sims`" }, "absent"),
  hosted_sims: Optional(
    Type.Array(Id(), {
      minItems: 1,
      maxItems: 20,
      uniqueItems: true,
      description:
        'a sender pool instead of `hosted_sim`: 1 to 20 of your numbers; the send goes from the one that last wrote to the recipient when its phone is online and under its daily cap, else from a healthy one (docs/sending.md "Sender pools"); with a bulk `to`, the number of each recipient is chosen by that rule',
    }),
    "absent",
  ),
  to: Type.Union(
    [
      Recipient,
      Type.Array(
        Type.Union([
          Recipient,
          Type.Object(
            {
              to: Recipient,
              vars: Type.Optional(
                Type.Record(Type.String({ pattern: VarName }), Text({ maxLength: 1600 }), {
                  description: "values of the text's `{{name}}` variables for this recipient (names: letters, digits, _)",
                }),
              ),
            },
            { additionalProperties: false },
          ),
        ]),
        {
          // The count (1 to 1000) is checked by the handler (send-request.ts): bounds on a new
          // member of a union read as a narrowed request to the breaking-change guard.
          description:
            'a bulk send: 1 to 1000 distinct recipients, each a number or `{ to, vars }`; the answer is a batch (docs/api-notes.md "Scheduled, expiring and bulk sends")',
        },
      ),
    ],
    { description: "an E.164 phone number, or an array of up to 1000 recipients (a bulk send)" },
  ),
  text: Text({
    minLength: 1,
    maxLength: 1600,
    description: "1 to 1600 characters (Unicode code points); in a bulk send `{{name}}` is replaced by each recipient's `vars.name`",
  }),
  send_at: Optional(DateTime("when to send, at most 30 days ahead; absent or past: at once"), "absent"),
  expires_at: Optional(DateTime("after send_at; a send not handed to a phone or the provider by then ends `expired` and is never sent"), "absent"),
});

export const StatusBody = Type.Object({
  status: Type.Union([Type.Literal("sending"), Type.Literal("sent"), Type.Literal("delivered"), Type.Literal("failed")]),
  error: Optional(Text({ maxLength: 1000 }), "absent"),
});

const Timestamp = t.String({ format: "date-time" });
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()]);
export const Message = t.Object({
  id: Type.Integer(),
  hosted_sim_id: Nullable(Type.Integer()),
  number: t.String(),
  direction: t.Union([t.Literal("inbound"), t.Literal("outbound")]),
  from: t.String(),
  to: t.String(),
  text: t.String(),
  status: t.String({
    description:
      "received; or scheduled, queued, sending, sent, delivered, failed, cancelled, expired (an open list: more may come, treat unknown values as unfinished)",
  }),
  source: t.Union([t.Literal("provider"), t.Literal("device"), t.Literal("api")]),
  device_id: Nullable(Type.Integer()),
  sim_slot: Nullable(Type.Integer()),
  external_id: Nullable(t.String()),
  team_id: Nullable(Type.Integer()),
  locked: t.Boolean(),
  error: Nullable(
    t.String({
      description: "why an outbound message failed or expired (the device's, the provider's or the server's reason); null otherwise",
    }),
  ),
  attempts: Type.Integer({
    description:
      "outbound: how many times the message was handed to a phone or the provider (provider API calls; a device taking it counts one); 0 before that and for inbound messages",
  }),
  code: Nullable(
    t.String({
      description:
        "the one-time code an inbound message carries (digits without separators, letter-prefixed and alphanumeric codes as shown), extracted when it is stored; null when none, and for outbound messages",
    }),
  ),
  received_at: Nullable(Timestamp),
  sent_at: Nullable(Timestamp),
  send_at: Nullable(t.String({ format: "date-time", description: "outbound: when a scheduled send goes out; null: at once, and for inbound messages" })),
  expires_at: Nullable(t.String({ format: "date-time", description: "outbound: after it an unsent message ends `expired`; null: none" })),
  batch_id: Nullable(t.String({ description: "outbound: the bulk send the message belongs to; null for a single send" })),
  status_updated_at: t.String({ format: "date-time", description: "when `status` last changed" }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const MessageData = t.Object({ data: Message });
const Batch = t.Object({
  batch_id: t.String({ description: "lists the batch with GET /api/messages?batch=" }),
  messages: t.Array(Message, { description: "one per recipient, in the order given" }),
});
/** The answer of a send: the message (`to` a number), or the batch (`to` an array). */
export const SendData = t.Object({ data: t.Union([Message, Batch]) });
export const BatchParams = t.Object({ id: BatchId("a batch id") });
export const BatchSummaryData = t.Object({
  data: t.Object({
    batch_id: t.String(),
    total: Type.Integer(),
    counts: t.Record(t.String(), Type.Integer(), { description: "messages per status (only statuses some message is in)" }),
    created_at: Timestamp,
  }),
});
export const MessagePage = PageOf(Message);
export const NextMessageData = t.Object({
  data: t.Union([Message, t.Null()], { description: "the first matching message, or null when none arrived within the timeout" }),
});

export const InboxQuery = t.Object({
  before: t.Optional({
    ...IdParam(),
    description: "list messages with a lower id than this (the previous page's `meta.next_before`); default: from the newest",
  }),
  per_page: t.Optional(IntegerParam(1, 100, { description: "1 to 100, default 50" })),
  from: HistoryQuery.properties.from,
  q: HistoryQuery.properties.q,
  has_code: HistoryQuery.properties.has_code,
});
export const InboxPage = t.Object({
  data: t.Array(Message),
  meta: t.Object({
    per_page: Type.Integer(),
    next_before: t.Union([Type.Integer(), t.Null()], { description: "pass as `before` for the next (older) page; null when this page is the last" }),
  }),
});
