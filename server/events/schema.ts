import { Kind, Type, TypeRegistry } from "@sinclair/typebox";
import { t } from "elysia";
import { IdParam, IntegerParam } from "../lib/fields";
import { EVENT_TYPES, isEventType } from "./catalog";
import { decodeCursor, encodeCursor } from "./cursor";

/** A cursor exactly as this server writes them: base64 decoding is lenient, so an altered one may still decode. */
const isIssuedCursor = (value: string) => {
  const position = decodeCursor(value);
  return position !== null && encodeCursor(position) === value;
};

/** `after`: `now`, or a cursor this server issued (an event id or a `meta.next_cursor`). */
export const isEventStart = (value: unknown): value is string => typeof value === "string" && (value === "now" || isIssuedCursor(value));
TypeRegistry.Set("EventStart", (_schema, value) => isEventStart(value));

/** `types`: event type names separated by commas, each one of the catalog's. */
export const TYPES_ERROR = `must be event types separated by commas, of: ${EVENT_TYPES.join(", ")}`;
export const isEventTypeList = (value: unknown): value is string =>
  typeof value === "string" && value.length <= 2000 && value.split(",").every((name) => isEventType(name.trim()));
TypeRegistry.Set("EventTypeList", (_schema, value) => isEventTypeList(value));

export const EventsQuery = t.Object({
  after: t.Optional(
    Type.Unsafe<string>({
      [Kind]: "EventStart",
      type: "string",
      errorMessage: "must be a cursor from GET /api/events (an event id or meta.next_cursor) or now",
      description:
        "list the events after this cursor (an event `id`, or `meta.next_cursor` of the previous answer); `now`: only events appended from now on. Default: from the oldest retained event.",
    }),
  ),
  types: t.Optional(
    Type.Unsafe<string>({
      [Kind]: "EventTypeList",
      type: "string",
      errorMessage: TYPES_ERROR,
      description: `only events of these types, separated by commas (${EVENT_TYPES.join(", ")}). An API key needs the permission of each type's family.`,
    }),
  ),
  hosted_sim: t.Optional(IdParam()),
  device: t.Optional(IdParam()),
  per_page: t.Optional(IntegerParam(1, 500, { description: "1 to 500, default 100" })),
  wait: t.Optional(
    IntegerParam(1, 60, {
      description: "seconds to wait, 1 to 60, when no event matches yet: the answer comes as soon as one does, or with an empty list when the time is up",
    }),
  ),
});

const Timestamp = t.String({ format: "date-time" });
export const Event = t.Object({
  id: t.String({ description: "the event's id, which is also its cursor: list the events after it with `after=<id>`" }),
  // A string, not an enum: the catalog grows (issue 19 added message.scheduled/cancelled/expired), and a
  // widened response enum breaks generated clients; like a message's `status`, the list is open.
  type: t.String({
    description: `the event type (docs/events.md); today one of: ${EVENT_TYPES.join(", ")}. The list is open: treat an unknown type as one to skip`,
  }),
  created_at: Timestamp,
  organization_id: Type.Integer({ description: "the organization this view of the event belongs to (an event id belongs to one organization)" }),
  data: t.Record(t.String(), t.Unknown(), { description: "the event's payload, as webhooks and realtime carry it (docs/events.md)" }),
});

export const EventPage = t.Object({
  data: t.Array(Event),
  meta: t.Object({
    next_cursor: t.String({
      description:
        "call again with `after=<next_cursor>` for what follows: the last listed event's id, or when none was listed the `after` given (from `now`, or without `after`, a cursor naming that start)",
    }),
    per_page: Type.Integer(),
    has_more: t.Boolean({ description: "true when more events follow at once (the page is full); false: the list has caught up" }),
  }),
});
