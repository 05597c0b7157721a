import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { API_KEY_PREFIX_LENGTH, newApiKey } from "../auth/tokens";
import { notFound } from "../errors";
import { sha256 } from "../lib/crypto";
import type { Services } from "../services";
import { canonicalPermissions, presentApiKey } from "./present";
import { ApiKeyData, ApiKeyList, ApiKeyParams, ApiKeyWithSecret, CreateApiKeyBody, UpdateApiKeyBody } from "./schema";
import { deleteApiKey, findApiKey, insertApiKey, listApiKeys, replaceApiKeySecret, updateApiKey } from "./store";

const tags = ["API keys"];
const description = "Session tokens only: an API key answers 403 api_key_not_allowed.";

function newSecret() {
  const key = newApiKey();
  return { key, prefix: key.slice(0, API_KEY_PREFIX_LENGTH), hash: sha256(key) };
}

/** API-key management (SPEC.md 4.2): any member reads, admins and owners change. */
export function apiKeyRoutes(services: Pick<Services, "auth" | "sql">) {
  const { sql } = services;
  return new Elysia()
    .use(callerPlugin(services.auth))
    .get(
      "/api/api-keys",
      async ({ caller }) => {
        const c = await caller({ apiKey: "session_only" });
        return { data: (await listApiKeys(sql, c.organization.id)).map(presentApiKey) };
      },
      { response: { 200: ApiKeyList }, detail: { tags, summary: "List the organization's API keys", description } },
    )
    .post(
      "/api/api-keys",
      async ({ caller, body, set }) => {
        const c = await caller({ apiKey: "session_only", role: "admin" });
        const secret = newSecret();
        const row = await insertApiKey(sql, {
          organizationId: c.organization.id,
          name: body.name,
          permissions: canonicalPermissions(body.permissions),
          prefix: secret.prefix,
          hash: secret.hash,
          createdBy: c.user?.id ?? null,
        });
        set.status = 201;
        return { api_key: presentApiKey(row), plain_text_key: secret.key };
      },
      { body: CreateApiKeyBody, response: { 201: ApiKeyWithSecret }, detail: { tags, summary: "Create an API key (the full key is shown once)", description } },
    )
    .get(
      "/api/api-keys/:api_key",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "session_only" });
        const row = await findApiKey(sql, c.organization.id, params.api_key);
        if (!row) throw notFound("API key");
        return { data: presentApiKey(row) };
      },
      { params: ApiKeyParams, response: { 200: ApiKeyData }, detail: { tags, summary: "Show an API key", description } },
    )
    .patch(
      "/api/api-keys/:api_key",
      async ({ caller, params, body }) => {
        const c = await caller({ apiKey: "session_only", role: "admin" });
        const permissions = body.permissions ? canonicalPermissions(body.permissions) : undefined;
        const row = await updateApiKey(sql, c.organization.id, params.api_key, { name: body.name, permissions });
        if (!row) throw notFound("API key");
        services.auth.revoke({ apiKeyId: row.id });
        return { data: presentApiKey(row) };
      },
      {
        params: ApiKeyParams,
        body: UpdateApiKeyBody,
        response: { 200: ApiKeyData },
        detail: { tags, summary: "Rename an API key or change its permissions", description },
      },
    )
    .delete(
      "/api/api-keys/:api_key",
      async ({ caller, params, set }) => {
        const c = await caller({ apiKey: "session_only", role: "admin" });
        if (!(await deleteApiKey(sql, c.organization.id, params.api_key))) throw notFound("API key");
        services.auth.revoke({ apiKeyId: params.api_key });
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      { params: ApiKeyParams, detail: { tags, summary: "Delete an API key (it answers 401 from then on)", description } },
    )
    .post(
      "/api/api-keys/:api_key/regenerate",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "session_only", role: "admin" });
        const secret = newSecret();
        const row = await replaceApiKeySecret(sql, c.organization.id, params.api_key, secret);
        if (!row) throw notFound("API key");
        services.auth.revoke({ apiKeyId: row.id });
        return { api_key: presentApiKey(row), plain_text_key: secret.key };
      },
      {
        params: ApiKeyParams,
        response: { 200: ApiKeyWithSecret },
        detail: { tags, summary: "Replace the key's secret; the old key stops working at once", description },
      },
    );
}
