import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { invalidState, notFound } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import type { Services } from "../services";
import { manage, read, requireIntegration } from "./actions";
import { IntegrationParams, MappingChanged, MappingCreateBody, MappingData, MappingList, MappingParams, MappingUpdateBody, MessageOnly } from "./schema";
import { deleteMapping, findMapping, findTeam, insertMapping, listMappings, updateMapping } from "./store";

const tags = ["Webhooks"];
const description =
  "Mappings connect an integration to teams of the same organization. Members read; changes need the admin or owner role or webhooks.receive.";

export function mappingRoutes(services: Pick<Services, "auth" | "sql" | "clock" | "secrets">) {
  const { sql } = services;
  const requireMapping = async (integrationId: number, mappingId: number) => {
    const row = await findMapping(sql, integrationId, mappingId);
    if (!row) throw notFound("Webhook mapping");
    return row;
  };
  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/webhook-integrations/:webhook_integration/mappings",
      async ({ caller: c, params }) => {
        const integration = await requireIntegration(sql, c.organization.id, params.webhook_integration);
        return { data: await listMappings(sql, integration.id), webhook_integration: { id: integration.id, name: integration.name } };
      },
      { auth: read, params: IntegrationParams, response: { 200: MappingList }, detail: { tags, summary: "List an integration's mappings", description } },
    )
    .post(
      "/api/webhook-integrations/:webhook_integration/mappings",
      async ({ caller: c, params, body, set }) => {
        const integration = await requireIntegration(sql, c.organization.id, params.webhook_integration);
        const team = await findTeam(sql, c.organization.id, body.team_id);
        if (!team) throw notFound("Team");
        const id = await insertMapping(sql, integration.id, team.id, body.forwarding_mode);
        if (id === null) throw invalidState("The integration is already mapped to this team; update that mapping instead.");
        set.status = 201;
        return { message: "Webhook mapping created successfully.", data: await requireMapping(integration.id, id) };
      },
      {
        idempotent: true,
        auth: manage,
        params: IntegrationParams,
        body: MappingCreateBody,
        response: { 201: MappingChanged },
        detail: { tags, summary: "Map the integration to a team (one mapping per team; a second answers 409)", description },
      },
    )
    .get(
      "/api/webhook-integrations/:webhook_integration/mappings/:webhook_mapping",
      async ({ caller: c, params }) => {
        const integration = await requireIntegration(sql, c.organization.id, params.webhook_integration);
        return { data: await requireMapping(integration.id, params.webhook_mapping) };
      },
      { auth: read, params: MappingParams, response: { 200: MappingData }, detail: { tags, summary: "Show a mapping", description } },
    )
    .patch(
      "/api/webhook-integrations/:webhook_integration/mappings/:webhook_mapping",
      async ({ caller: c, params, body }) => {
        const integration = await requireIntegration(sql, c.organization.id, params.webhook_integration);
        if (!(await updateMapping(sql, integration.id, params.webhook_mapping, body.forwarding_mode, body.is_active))) throw notFound("Webhook mapping");
        return { message: "Webhook mapping updated successfully.", data: await requireMapping(integration.id, params.webhook_mapping) };
      },
      {
        auth: manage,
        params: MappingParams,
        body: MappingUpdateBody,
        response: { 200: MappingChanged },
        detail: { tags, summary: "Update a mapping", description },
      },
    )
    .delete(
      "/api/webhook-integrations/:webhook_integration/mappings/:webhook_mapping",
      async ({ caller: c, params }) => {
        const integration = await requireIntegration(sql, c.organization.id, params.webhook_integration);
        if (!(await deleteMapping(sql, integration.id, params.webhook_mapping))) throw notFound("Webhook mapping");
        return { message: "Webhook mapping deleted successfully." };
      },
      { auth: manage, params: MappingParams, response: { 200: MessageOnly }, detail: { tags, summary: "Delete a mapping", description } },
    );
}
