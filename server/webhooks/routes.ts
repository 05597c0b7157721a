import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import { holdOpen } from "../lib/versions";
import type { Services } from "../services";
import {
  changeIntegration,
  createIntegration,
  logsPage,
  manage,
  read,
  redeliver,
  regenerateSecret,
  replay,
  requireIntegration,
  testIntegration,
} from "./actions";
import { mappingRoutes } from "./mapping-routes";
import { presentIntegration } from "./present";
import {
  IntegrationCreateBody,
  IntegrationCreated,
  IntegrationData,
  IntegrationList,
  IntegrationParams,
  IntegrationUpdateBody,
  IntegrationUpdated,
  LogPage,
  LogParams,
  LogsQuery,
  MessageOnly,
  RedeliveryQueued,
  ReplayBody,
  ReplayQueued,
  SecretRegenerated,
  TestOutcome,
} from "./schema";
import { deleteIntegration, listIntegrations } from "./store";
import { teamWebhookRoutes } from "./team-routes";

const tags = ["Webhooks"];
const description =
  "Scope: the caller's organization. Members read; changes need the admin or owner role. An API key needs webhooks.receive, which allows every webhook operation of its organization.";

function integrationRoutes(services: Pick<Services, "auth" | "sql" | "webhooks" | "clock" | "secrets">) {
  const { sql } = services;
  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/webhook-integrations",
      async ({ caller: c }) => {
        const rows = await listIntegrations(sql, c.organization.id);
        return { data: rows.map((row) => presentIntegration(row, c)), organization: { id: c.organization.id, name: c.organization.name } };
      },
      { auth: read, response: { 200: IntegrationList }, detail: { tags, summary: "List webhook integrations", description } },
    )
    .post(
      "/api/webhook-integrations",
      async ({ caller: c, body, set }) => {
        const data = await createIntegration(services, c, c.organization.id, body);
        set.status = 201;
        return { message: "Webhook integration created successfully.", data };
      },
      {
        idempotent: true,
        auth: manage,
        body: IntegrationCreateBody,
        response: { 201: IntegrationCreated },
        detail: { tags, summary: "Create a webhook integration (its whsec_ secret is shown only in this answer)", description },
      },
    )
    .get(
      "/api/webhook-integrations/:webhook_integration",
      async ({ caller: c, params }) => {
        return { data: presentIntegration(await requireIntegration(sql, c.organization.id, params.webhook_integration), c) };
      },
      {
        auth: read,
        params: IntegrationParams,
        response: { 200: IntegrationData },
        detail: { tags, summary: "Show a webhook integration with its mappings", description },
      },
    )
    .patch(
      "/api/webhook-integrations/:webhook_integration",
      async ({ caller: c, params, body }) => {
        const data = await changeIntegration(services, c, c.organization.id, params.webhook_integration, body);
        return { message: "Webhook integration updated successfully.", data };
      },
      {
        auth: manage,
        params: IntegrationParams,
        body: IntegrationUpdateBody,
        response: { 200: IntegrationUpdated },
        detail: { tags, summary: "Update a webhook integration (setting is_active true again clears its failure run)", description },
      },
    )
    .delete(
      "/api/webhook-integrations/:webhook_integration",
      async ({ caller: c, params }) => {
        if (!(await deleteIntegration(sql, c.organization.id, params.webhook_integration))) throw notFound("Webhook integration");
        return { message: "Webhook integration deleted successfully." };
      },
      {
        auth: manage,
        params: IntegrationParams,
        response: { 200: MessageOnly },
        detail: { tags, summary: "Delete a webhook integration and its mappings", description },
      },
    )
    .post(
      "/api/webhook-integrations/:webhook_integration/regenerate-secret",
      async ({ caller: c, params }) => {
        const data = await regenerateSecret(services, c.organization.id, params.webhook_integration);
        return { message: "Webhook secret regenerated successfully.", data };
      },
      {
        idempotent: true,
        auth: manage,
        params: IntegrationParams,
        response: { 200: SecretRegenerated },
        detail: { tags, summary: "Replace the signing secret; the old one stops signing at once", description },
      },
    )
    .post(
      "/api/webhook-integrations/:webhook_integration/test",
      async ({ caller: c, params, server, request }) =>
        testIntegration(services, c.organization.id, params.webhook_integration, (seconds) => holdOpen(server, request, seconds)),
      {
        auth: manage,
        params: IntegrationParams,
        response: { 200: TestOutcome },
        detail: { tags, summary: "Send a signed webhook.test event now and report the outcome (success false when the target is down)", description },
      },
    )
    .get(
      "/api/webhook-integrations/:webhook_integration/logs",
      async ({ caller: c, params, query, request }) => {
        const integration = await requireIntegration(sql, c.organization.id, params.webhook_integration);
        return logsPage(sql, integration.id, query, request);
      },
      {
        auth: read,
        params: IntegrationParams,
        query: LogsQuery,
        response: { 200: LogPage },
        detail: { tags, summary: "Delivery log: one record per attempt, newest first, filterable by status", description },
      },
    )
    .post(
      "/api/webhook-integrations/:webhook_integration/logs/:log/redeliver",
      async ({ caller: c, params, set }) => {
        set.status = 202;
        return redeliver(services, c.organization.id, params.webhook_integration, params.log);
      },
      {
        idempotent: true,
        auth: manage,
        params: LogParams,
        response: { 202: RedeliveryQueued },
        detail: {
          tags,
          summary: "Deliver the event of a log record again as a new delivery, under the same webhook-id (409 for a test event)",
          description,
        },
      },
    )
    .post(
      "/api/webhook-integrations/:webhook_integration/replay",
      async ({ caller: c, params, body, set }) => {
        set.status = 202;
        return replay(services, c.organization.id, params.webhook_integration, body);
      },
      {
        idempotent: true,
        auth: manage,
        params: IntegrationParams,
        body: ReplayBody,
        response: { 202: ReplayQueued },
        detail: {
          tags,
          summary:
            "Send the integration's events of a window (at most 7 days, 10,000 events) again as new deliveries under their own webhook-ids; replays go through their own slower queue, one at a time per integration (409 while one is being sent)",
          description,
        },
      },
    );
}

/** Every webhook route: the organization's integrations, their mappings, and the team view. */
export function webhookRoutes(services: Pick<Services, "auth" | "sql" | "webhooks" | "clock" | "secrets">) {
  return new Elysia().use(integrationRoutes(services)).use(mappingRoutes(services)).use(teamWebhookRoutes(services));
}
