import { Elysia } from "elysia";
import type { Services } from "../services";
import { callerPlugin } from "./plugin";
import { presentOrganization, presentUser } from "./present";

export function authRoutes(services: Pick<Services, "auth">) {
  return new Elysia().use(callerPlugin(services.auth)).get(
    "/api/me",
    async ({ caller }) => {
      const c = await caller({ apiKey: "any" });
      return {
        user: c.user ? presentUser(c.user) : null,
        auth_type: c.kind,
        organization: presentOrganization(c.organization),
        ...(c.apiKey ? { api_key: c.apiKey } : {}),
      };
    },
    { detail: { tags: ["Auth"], summary: "Current identity" } },
  );
}
