import { Type } from "@sinclair/typebox";
import { t } from "elysia";

const Count = (description: string) => t.Object({ used: Type.Integer(), limit: Type.Integer(), remaining: Type.Integer() }, { description });

export const UsageResponse = t.Object({
  data: t.Object({
    organization_id: Type.Integer(),
    plan: t.String(),
    devices: Count("devices that are not revoked, against the plan's max_devices"),
    monthly_messages: Count("outbound messages of this UTC month (not cancelled or expired), against the plan's monthly_messages"),
    period: t.Object({ start: t.String({ format: "date-time" }), end: t.String({ format: "date-time" }) }, { description: "the UTC month counted" }),
  }),
});
