import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import type { Services } from "../services";
import { canonicalPermissions, presentApiKey } from "./present";
import { ApiKeyData, ApiKeyList, ApiKeyParams, ApiKeyWithSecret, CreateApiKeyBody, UpdateApiKeyBody } from "./schema";
import { findApiKey, listApiKeys } from "./store";

const tags = ["API keys"];
const description = "Session tokens only: an API key answers 403 api_key_not_allowed.";

/** API-key management (SPEC.md 4.2): any member reads, admins and owners change; the credential module writes. */
export function apiKeyRoutes(services: Pick<Services, "auth" | "sql" | "clock" | "secrets">) {
  const { sql } = services;
  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/api-keys",
      async ({ caller: c }) => {
        return { data: (await listApiKeys(sql, c.organization.id)).map(presentApiKey) };
      },
      { auth: { apiKey: "session_only" }, response: { 200: ApiKeyList }, detail: { tags, summary: "List the organization's API keys", description } },
    )
    .post(
      "/api/api-keys",
      async ({ caller: c, body, set }) => {
        const { row, key } = await services.auth.createApiKey({
          organizationId: c.organization.id,
          name: body.name,
          permissions: canonicalPermissions(body.permissions),
          createdBy: c.user?.id ?? null,
        });
        set.status = 201;
        return { api_key: presentApiKey(row), plain_text_key: key };
      },
      {
        idempotent: true,
        auth: { apiKey: "session_only", role: "admin" },
        body: CreateApiKeyBody,
        response: { 201: ApiKeyWithSecret },
        detail: { tags, summary: "Create an API key (the full key is shown once)", description },
      },
    )
    .get(
      "/api/api-keys/:api_key",
      async ({ caller: c, params }) => {
        const row = await findApiKey(sql, c.organization.id, params.api_key);
        if (!row) throw notFound("API key");
        return { data: presentApiKey(row) };
      },
      { auth: { apiKey: "session_only" }, params: ApiKeyParams, response: { 200: ApiKeyData }, detail: { tags, summary: "Show an API key", description } },
    )
    .patch(
      "/api/api-keys/:api_key",
      async ({ caller: c, params, body }) => {
        const permissions = body.permissions ? canonicalPermissions(body.permissions) : undefined;
        const row = await services.auth.updateApiKey(c.organization.id, params.api_key, { name: body.name, permissions });
        if (!row) throw notFound("API key");
        return { data: presentApiKey(row) };
      },
      {
        auth: { apiKey: "session_only", role: "admin" },
        params: ApiKeyParams,
        body: UpdateApiKeyBody,
        response: { 200: ApiKeyData },
        detail: { tags, summary: "Rename an API key or change its permissions", description },
      },
    )
    .delete(
      "/api/api-keys/:api_key",
      async ({ caller: c, params, set }) => {
        if (!(await services.auth.deleteApiKey(c.organization.id, params.api_key))) throw notFound("API key");
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      {
        auth: { apiKey: "session_only", role: "admin" },
        params: ApiKeyParams,
        detail: { tags, summary: "Delete an API key (it answers 401 from then on)", description },
      },
    )
    .post(
      "/api/api-keys/:api_key/regenerate",
      async ({ caller: c, params }) => {
        const regenerated = await services.auth.regenerateApiKey(c.organization.id, params.api_key);
        if (!regenerated) throw notFound("API key");
        return { api_key: presentApiKey(regenerated.row), plain_text_key: regenerated.key };
      },
      {
        idempotent: true,
        auth: { apiKey: "session_only", role: "admin" },
        params: ApiKeyParams,
        response: { 200: ApiKeyWithSecret },
        detail: { tags, summary: "Replace the key's secret; the old key stops working at once", description },
      },
    );
}
