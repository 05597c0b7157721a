import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import { IdParam, Optional, Text } from "../lib/fields";
import { LIMITS } from "./sending-policy";

const HHMM = "^([01][0-9]|2[0-3]):[0-5][0-9]$";
const QuietHours = t.Object(
  {
    start: t.String({ pattern: HHMM, description: "local time (HH:MM, 24 h) quiet hours begin", errorMessage: "must be a time HH:MM" }),
    end: t.String({
      pattern: HHMM,
      description: "local time (HH:MM, 24 h) they end; may be earlier than start (overnight)",
      errorMessage: "must be a time HH:MM",
    }),
  },
  { additionalProperties: false, description: "no message is handed to the phone between start and end in time_zone; sends wait for the window to open" },
);

const Fields = {
  messages_per_minute: Type.Integer({
    minimum: 1,
    maximum: LIMITS.messagesPerMinute,
    description: "at most this many messages a minute (one every 60/n seconds at most)",
  }),
  min_delay_seconds: Type.Integer({ minimum: 0, maximum: LIMITS.delaySeconds, description: "shortest random pause between two messages" }),
  max_delay_seconds: Type.Integer({
    minimum: 0,
    maximum: LIMITS.delaySeconds,
    description: "longest random pause between two messages; at least min_delay_seconds",
  }),
  daily_cap: Type.Integer({
    minimum: 1,
    maximum: LIMITS.dailyCap,
    description: "at most this many messages a local day (in time_zone); more wait for the next day",
  }),
};

export const PolicyBody = t.Object(
  {
    ...Fields,
    time_zone: Optional(
      Text({
        minLength: 1,
        maxLength: 64,
        description: "IANA time zone (Europe/Berlin) or fixed UTC offset (+05:30) of quiet hours and of the daily cap's day, default UTC",
      }),
      "absent",
    ),
    quiet_hours: Optional(QuietHours, "clears"),
  },
  { additionalProperties: false },
);
export type PolicyBody = typeof PolicyBody.static;

export const Policy = t.Object({
  ...Fields,
  time_zone: t.String(),
  quiet_hours: t.Union([QuietHours, t.Null()]),
  source: t.Union([t.Literal("number"), t.Literal("organization"), t.Literal("default")], {
    description: "where the policy comes from: the number's own, your organization's default, or the server's defaults",
  }),
});
export const PolicyData = t.Object({ data: Policy });
export const PolicyParams = t.Object({ id: IdParam() });
