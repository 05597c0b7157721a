import { Type } from "@sinclair/typebox";
import { t } from "elysia";

const Id = { minimum: 1, maximum: Number.MAX_SAFE_INTEGER, multipleOf: 1 };
// NUL cannot be stored in PostgreSQL text: refused as a validation error, not a 500.
const Alias = Type.String({ minLength: 1, maxLength: 64, description: "1 to 64 characters" });

export const NumberParams = t.Object({ id: t.Numeric(Id) });

export const NumberListQuery = t.Object({
  type: t.Optional(t.String({ maxLength: 32 })),
  status: t.Optional(t.String({ maxLength: 32 })),
  team_id: t.Optional(t.Numeric(Id)),
});

export const ClaimBody = Type.Object({
  hosted_sim_id: Type.Optional(Type.Integer(Id)),
  team_id: Type.Optional(Type.Integer(Id)),
  alias: Type.Optional(Type.Union([Alias, Type.Null()])),
});
export const OrderBody = Type.Object({ team_id: Type.Optional(Type.Integer(Id)), alias: Type.Optional(Type.Union([Alias, Type.Null()])) });
export const ClaimVirtualBody = Type.Object({
  hosted_sim_id: Type.Integer(Id),
  team_id: Type.Optional(Type.Integer(Id)),
  alias: Type.Optional(Type.Union([Alias, Type.Null()])),
});
export const LockBody = Type.Object({
  duration_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 3600, default: 600 })),
  team_id: Type.Optional(Type.Integer(Id)),
});
export const AliasBody = Type.Object({ alias: Type.Union([Alias, Type.Null()]) });

// Responses use Elysia's `t` (its format registry validates date-time).
const Timestamp = t.String({ format: "date-time" });
export const Lock = t.Object({
  organization_id: t.Integer(),
  team_id: t.Union([t.Integer(), t.Null()]),
  user_id: t.Union([t.Integer(), t.Null()]),
  locked_until: Timestamp,
});
export const HostedSim = t.Object({
  id: t.Integer(),
  number: t.String(),
  provider: t.String(),
  status: t.String(),
  type: t.String(),
  shared_max_orgs: t.Integer(),
  messages_received_count: t.Integer({ description: "inbound messages your organization may see on this number" }),
  organizations: t.Array(t.Object({ id: t.Integer(), name: t.String(), alias: t.Union([t.String(), t.Null()]), team_id: t.Union([t.Integer(), t.Null()]) }), {
    description: "your organization's attachment only",
  }),
  teams: t.Array(t.Object({ id: t.Integer(), name: t.String() })),
  locked: t.Boolean(),
  lock: t.Union([Lock, t.Null()], { description: "shown only to the lock holder's organization" }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const HostedSimData = t.Object({ data: HostedSim });
export const HostedSimList = t.Object({ data: t.Array(HostedSim) });
