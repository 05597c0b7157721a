import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import { holdOpen } from "../lib/versions";
import type { Services } from "../services";
import { changeIntegration, createIntegration, logsPage, manage, read, redeliver, replay, requireIntegration, testIntegration } from "./actions";
import { presentIntegration } from "./present";
import {
  IntegrationCreated,
  IntegrationData,
  IntegrationUpdated,
  LogPage,
  LogsQuery,
  MessageOnly,
  RedeliveryQueued,
  ReplayBody,
  ReplayQueued,
  TeamIntegrationList,
  TeamLogParams,
  TeamParams,
  TeamWebhookCreateBody,
  TeamWebhookParams,
  TeamWebhookUpdateBody,
  TestOutcome,
} from "./schema";
import { deleteMapping, findMappingByTeam, findTeam, listTeamIntegrations, updateMapping } from "./store";

const tags = ["Webhooks"];
const description =
  "The team view of the organization's webhook integrations (API.md §3): integrations mapped to the team. Members read; changes need the admin or owner role or webhooks.receive.";

/** The team view of API.md: `{webhook}` must be an integration of the organization mapped to the team, else 404. */
export function teamWebhookRoutes(services: Pick<Services, "auth" | "sql" | "webhooks" | "clock" | "secrets">) {
  const { sql } = services;
  const requireTeam = async (organizationId: number, teamId: number) => {
    const team = await findTeam(sql, organizationId, teamId);
    if (!team) throw notFound("Team");
    return team;
  };
  const requireTeamMapping = async (organizationId: number, teamId: number, integrationId: number) => {
    const team = await requireTeam(organizationId, teamId);
    const integration = await requireIntegration(sql, organizationId, integrationId);
    const mapping = await findMappingByTeam(sql, integration.id, team.id);
    if (!mapping) throw notFound("Webhook integration");
    return { team, integration, mapping };
  };
  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/teams/:team/webhooks",
      async ({ caller: c, params }) => {
        const team = await requireTeam(c.organization.id, params.team);
        const rows = await listTeamIntegrations(sql, c.organization.id, team.id);
        return { data: rows.map((row) => presentIntegration(row, c)), team: { id: team.id, name: team.name } };
      },
      {
        auth: read,
        params: TeamParams,
        response: { 200: TeamIntegrationList },
        detail: { tags, summary: "List the integrations mapped to a team", description },
      },
    )
    .post(
      "/api/teams/:team/webhooks",
      async ({ caller: c, params, body, set }) => {
        const team = await requireTeam(c.organization.id, params.team);
        const { forwarding_mode, ...integration } = body;
        const data = await createIntegration(services, c, c.organization.id, integration, { teamId: team.id, mode: forwarding_mode ?? "always" });
        set.status = 201;
        return { message: "Webhook integration created successfully.", data };
      },
      {
        idempotent: true,
        auth: manage,
        params: TeamParams,
        body: TeamWebhookCreateBody,
        response: { 201: IntegrationCreated },
        detail: { tags, summary: "Create an integration and its mapping to the team (forwarding_mode defaults to always)", description },
      },
    )
    .get(
      "/api/teams/:team/webhooks/:webhook",
      async ({ caller: c, params }) => {
        const { integration } = await requireTeamMapping(c.organization.id, params.team, params.webhook);
        return { data: presentIntegration(integration, c) };
      },
      {
        auth: read,
        params: TeamWebhookParams,
        response: { 200: IntegrationData },
        detail: { tags, summary: "Show an integration mapped to the team", description },
      },
    )
    .patch(
      "/api/teams/:team/webhooks/:webhook",
      async ({ caller: c, params, body }) => {
        const { integration, mapping } = await requireTeamMapping(c.organization.id, params.team, params.webhook);
        const { forwarding_mode, ...fields } = body;
        // The integration first: its validation may refuse the request, and then nothing has changed.
        let data = await changeIntegration(services, c, c.organization.id, integration.id, fields);
        if (forwarding_mode && forwarding_mode !== mapping.forwarding_mode) {
          await updateMapping(sql, integration.id, mapping.id, forwarding_mode, undefined);
          data = presentIntegration(await requireIntegration(sql, c.organization.id, integration.id), c);
        }
        return { message: "Webhook integration updated successfully.", data };
      },
      {
        auth: manage,
        params: TeamWebhookParams,
        body: TeamWebhookUpdateBody,
        response: { 200: IntegrationUpdated },
        detail: { tags, summary: "Update the integration (and, with forwarding_mode, the team's mapping)", description },
      },
    )
    .delete(
      "/api/teams/:team/webhooks/:webhook",
      async ({ caller: c, params }) => {
        const { integration, mapping } = await requireTeamMapping(c.organization.id, params.team, params.webhook);
        await deleteMapping(sql, integration.id, mapping.id);
        return { message: "Webhook mapping deleted successfully." };
      },
      {
        auth: manage,
        params: TeamWebhookParams,
        response: { 200: MessageOnly },
        detail: { tags, summary: "Remove the team's mapping (the integration itself stays)", description },
      },
    )
    .post(
      "/api/teams/:team/webhooks/:webhook/test",
      async ({ caller: c, params, server, request }) => {
        const { integration } = await requireTeamMapping(c.organization.id, params.team, params.webhook);
        return testIntegration(services, c.organization.id, integration.id, (seconds) => holdOpen(server, request, seconds));
      },
      {
        auth: manage,
        params: TeamWebhookParams,
        response: { 200: TestOutcome },
        detail: { tags, summary: "Send a signed webhook.test event now", description },
      },
    )
    .get(
      "/api/teams/:team/webhooks/:webhook/logs",
      async ({ caller: c, params, query, request }) => {
        const { integration } = await requireTeamMapping(c.organization.id, params.team, params.webhook);
        return logsPage(sql, integration.id, query, request);
      },
      {
        auth: read,
        params: TeamWebhookParams,
        query: LogsQuery,
        response: { 200: LogPage },
        detail: { tags, summary: "Delivery log of the integration", description },
      },
    )
    .post(
      "/api/teams/:team/webhooks/:webhook/logs/:log/redeliver",
      async ({ caller: c, params, set }) => {
        const { integration } = await requireTeamMapping(c.organization.id, params.team, params.webhook);
        set.status = 202;
        return redeliver(services, c.organization.id, integration.id, params.log);
      },
      {
        idempotent: true,
        auth: manage,
        params: TeamLogParams,
        response: { 202: RedeliveryQueued },
        detail: { tags, summary: "Deliver the event of a log record again, under the same webhook-id", description },
      },
    )
    .post(
      "/api/teams/:team/webhooks/:webhook/replay",
      async ({ caller: c, params, body, set }) => {
        const { integration } = await requireTeamMapping(c.organization.id, params.team, params.webhook);
        set.status = 202;
        return replay(services, c.organization.id, integration.id, body);
      },
      {
        idempotent: true,
        auth: manage,
        params: TeamWebhookParams,
        body: ReplayBody,
        response: { 202: ReplayQueued },
        detail: { tags, summary: "Send the integration's events of a window again (as POST /api/webhook-integrations/{id}/replay)", description },
      },
    );
}
