import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { idempotencyPlugin } from "../lib/idempotency";
import type { Services } from "../services";
import { presentRegistered } from "./present";
import { registerDevice } from "./registration";
import { RegisterDevice, Registered } from "./schema";

/** v2 of register: SPEC.md 4.2's fields at the top level only, without v1's deprecated `data` copy. */
export function deviceRoutesV2(services: Pick<Services, "auth" | "sql" | "clock" | "config" | "secrets">) {
  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .post(
      "/api/v2/byos/devices/register",
      async ({ caller: c, body, set }) => {
        const { device, cards } = await registerDevice(services, { organizationId: c.organization.id, userId: c.user?.id ?? null }, body);
        set.status = 201;
        return presentRegistered(device, cards, services.config.PROVIDER_NUMBER);
      },
      {
        idempotent: true,
        auth: { apiKey: "session_only" },
        body: RegisterDevice,
        response: { 201: Registered },
        detail: { tags: ["BYOS devices"], summary: "Register a BYOS device (v2: the fields at the top level only)" },
      },
    );
}
