import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import type { Services } from "../services";
import { callerPlugin } from "./plugin";
import { presentIdentity } from "./present";
import { MeResponse } from "./schema";
import { findApiKeyUser, listMemberships } from "./store";

const MeResponseV2 = t.Composite([
  t.Omit(MeResponse, ["organization"]),
  t.Object({
    current_organization_id: Type.Integer(),
    organizations: t.Array(t.Object({ id: Type.Integer(), name: t.String(), role: t.Union([t.String(), t.Null()]) })),
  }),
]);

/**
 * v2 of the identity operation: every organization of the caller with its role, instead of the
 * single `organization` of v1. Same caller resolution and presenter; only the shape differs.
 */
export function authRoutesV2(services: Pick<Services, "auth" | "sql">) {
  return new Elysia().use(callerPlugin(services.auth)).get(
    "/api/v2/me",
    async ({ caller: c }) => {
      const { organization, ...identity } = presentIdentity(c, c.apiKey ? await findApiKeyUser(services.sql, c.apiKey.id) : c.user);
      const organizations = c.user ? await listMemberships(services.sql, c.user.id) : [{ id: organization.id, name: organization.name, role: null }];
      return { ...identity, current_organization_id: organization.id, organizations };
    },
    {
      auth: { apiKey: "any" },
      response: { 200: MeResponseV2 },
      detail: { tags: ["Auth"], summary: "Current identity (v2): every organization of the caller" },
    },
  );
}
