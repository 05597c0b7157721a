import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import { Id, IdParam, Optional, Text } from "../lib/fields";

// NUL cannot be stored in PostgreSQL text: refused as a validation error, not a 500.
const Alias = Text({ minLength: 1, maxLength: 64, description: "1 to 64 characters" });

export const NumberParams = t.Object({ id: IdParam() });

export const NumberListQuery = t.Object({
  type: t.Optional(Text({ maxLength: 32 })),
  status: t.Optional(Text({ maxLength: 32 })),
  team_id: t.Optional(IdParam()),
});

export const ClaimBody = Type.Object({
  hosted_sim_id: Optional(Id(), "absent"),
  team_id: Optional(Id(), "absent"),
  alias: Optional(Alias, "clears"),
});
export const OrderBody = Type.Object({ team_id: Optional(Id(), "absent"), alias: Optional(Alias, "clears") });
export const ClaimVirtualBody = Type.Object({
  hosted_sim_id: Id(),
  team_id: Optional(Id(), "absent"),
  alias: Optional(Alias, "clears"),
});
/** Who sent an SMS: an E.164 number, or an alphanumeric sender id of at most 11 characters (short codes included). */
export const SENDER_PATTERN = "^(\\+[1-9][0-9]{6,14}|[A-Za-z0-9][A-Za-z0-9 .&_-]{0,10})$";
export const LockBody = Type.Object({
  duration_seconds: Optional(Type.Integer({ minimum: 60, maximum: 3600, default: 600 }), "absent"),
  team_id: Optional(Id(), "absent"),
  release_on_message: Optional(
    Type.Boolean({
      description:
        "true: the lock ends by itself right after the first inbound message under it (from `sender` if given) was stored and forwarded. Absent: false for a new lock; extending your lock keeps its options.",
    }),
    "absent",
  ),
  sender: Optional(
    Type.String({
      pattern: SENDER_PATTERN,
      errorMessage: "must be an E.164 number or an alphanumeric sender id of at most 11 characters",
      description:
        "Only with release_on_message: true (else 422): only a message from this sender (E.164, or an alphanumeric sender id up to 11 characters, compared ignoring case) releases the lock.",
      examples: ["+15550001111", "Google"],
    }),
    "absent",
  ),
});
export const AliasBody = Type.Object({ alias: Type.Union([Alias, Type.Null()]) });

// Responses use Elysia's `t` (its format registry validates date-time), and TypeBox's Type.Integer,
// which has no transform (docs/architecture.md, server/lib/fields.ts).
const Timestamp = t.String({ format: "date-time" });
export const Lock = t.Object({
  organization_id: Type.Integer(),
  team_id: t.Union([Type.Integer(), t.Null()]),
  user_id: t.Union([Type.Integer(), t.Null()]),
  locked_until: Timestamp,
  release_on_message: t.Boolean({ description: "the lock ends by itself after the first inbound message under it (from `sender` if set)" }),
  sender: t.Union([t.String(), t.Null()], { description: "the only sender whose message releases the lock; null: any sender" }),
});
export const HostedSim = t.Object({
  id: Type.Integer(),
  number: t.String(),
  provider: t.String(),
  status: t.String(),
  type: t.String(),
  shared_max_orgs: Type.Integer(),
  messages_received_count: Type.Integer({ description: "inbound messages your organization may see on this number" }),
  organizations: t.Array(
    t.Object({ id: Type.Integer(), name: t.String(), alias: t.Union([t.String(), t.Null()]), team_id: t.Union([Type.Integer(), t.Null()]) }),
    {
      description: "the attachments of the organizations you read in (yours only, never another organization's)",
    },
  ),
  teams: t.Array(t.Object({ id: Type.Integer(), name: t.String() })),
  locked: t.Boolean(),
  lock: t.Union([Lock, t.Null()], { description: "shown only to the lock holder's organization" }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const HostedSimData = t.Object({ data: HostedSim });
export const HostedSimList = t.Object({ data: t.Array(HostedSim) });
