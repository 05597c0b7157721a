import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import type { Services } from "../services";
import { UsageResponse } from "./schema";
import { planUsage, quotaPeriod } from "./usage";

const count = (used: number, limit: number) => ({ used, limit, remaining: Math.max(0, limit - used) });

/** Plan usage of the caller's organization (docs/api-notes.md "Plan usage"). */
export function usageRoutes(services: Pick<Services, "auth" | "sql" | "clock">) {
  return new Elysia().use(callerPlugin(services.auth)).get(
    "/api/usage",
    async ({ caller: c }) => {
      const { plan, devices, messages } = await planUsage(services.sql, c.organization.id);
      const period = quotaPeriod(services.clock.now());
      return {
        data: {
          organization_id: c.organization.id,
          plan: plan.name,
          devices: count(devices, plan.max_devices),
          monthly_messages: count(messages, plan.monthly_messages),
          period: { start: period.start.toISOString(), end: period.end.toISOString() },
        },
      };
    },
    {
      auth: { apiKey: "any" },
      response: { 200: UsageResponse },
      detail: {
        tags: ["Usage"],
        summary: "Plan usage of the organization",
        description:
          "Devices and this month's outbound messages against the plan's limits, for the organization the caller acts in (X-Organization-Id, else the first membership; an API key's own). Any member or API key may read it.",
      },
    },
  );
}
