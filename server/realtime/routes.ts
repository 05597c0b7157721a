import { Elysia } from "elysia";
import { bearerToken, type Caller } from "../auth/caller";
import { callerPlugin } from "../auth/plugin";
import { AppError } from "../errors";
import { BODY_MEDIA_TYPES, FORM_MEDIA_TYPE, JSON_MEDIA_TYPE } from "../lib/body-rules";
import { sha256 } from "../lib/crypto";
import { clientAddress } from "../lib/versions";
import { grantOfAccessToken } from "../oauth/store";
import type { Services } from "../services";
import { authorizeChannel } from "./channels";
import type { Credential } from "./grants";
import { signChannel } from "./protocol";
import { ChannelAuthRequest, ChannelAuthResponse, ConnectionDetails } from "./schema";

const tags = ["Realtime"];

/** The auth endpoint is called from browser extensions and web pages of other origins. */
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "Authorization, Content-Type, X-Organization-Id, X-Requested-With, X-Socket-Id",
  "access-control-max-age": "600",
};

const preflight = ({ set }: { set: { status?: number | string } }) => {
  set.status = 204;
  return "";
};

/** SPEC.md 2.13 from PUBLIC_URL: what pusher-js (or Laravel Echo) needs to connect. */
export function connectionDetails(publicUrl: string, key: string): ConnectionDetails {
  const url = new URL(publicUrl);
  const tls = url.protocol === "https:";
  const scheme = tls ? "wss" : "ws";
  const base = url.pathname.replace(/\/+$/, "");
  return {
    broadcaster: "pusher",
    key,
    ws_url: `${scheme}://${url.host}${base}/app/${key}`,
    ws_host: url.hostname,
    ws_port: url.port ? Number(url.port) : tls ? 443 : 80,
    ws_scheme: scheme,
    force_tls: tls,
    auth_method: "bearer_token",
    auth_header: "Authorization: Bearer <token>",
    auth_endpoint: "/api/broadcasting/auth",
  };
}

/**
 * The credential a grant names, so revoking it ends the subscription. An API key also carries 8
 * bytes of its digest: regenerating keeps the id, and the old key's subscriptions must not pass
 * for the new key's.
 */
function credentialOf(c: Caller, request: Request, grantId: string | null): Credential {
  const token = c.apiKey ? bearerToken(request.headers.get("authorization")) : null;
  return {
    sessionId: c.sessionId,
    grantId,
    userId: c.user?.id ?? null,
    apiKeyId: c.apiKey?.id ?? null,
    keyDigest: token ? sha256(token).subarray(0, 8).toString("hex") : null,
  };
}

export function realtimeRoutes(services: Pick<Services, "auth" | "config" | "sql" | "realtime">) {
  const { realtime } = services;
  const details = connectionDetails(services.config.PUBLIC_URL, realtime.credentials.key);
  // CORS on every answer; set in onParse too, as an unparseable body fails before onTransform.
  return (
    new Elysia()
      // Before the caller's hooks, so their refusals (401, 403) carry the CORS headers too.
      .onParse(({ set }) => void Object.assign(set.headers, CORS))
      .onTransform(({ set }) => void Object.assign(set.headers, CORS))
      // The routes' rule is decided before the body is validated (a 401 before any 422), as on
      // every route; the preflights carry no token and take none.
      .use(callerPlugin(services.auth))
      .get("/api/broadcasting/connection", () => details, {
        auth: { apiKey: "any" },
        response: { 200: ConnectionDetails },
        detail: { tags, summary: "Broadcaster connection details (SPEC.md 2.13)" },
      })
      .options("/api/broadcasting/auth", preflight, { detail: { tags, summary: "CORS preflight of the channel authorization endpoint" } })
      .options("/api/broadcasting/connection", preflight, { detail: { tags, summary: "CORS preflight of the connection details" } })
      .post(
        "/api/broadcasting/auth",
        // A refusal keeps the CORS headers set above (Elysia adds them to every answer of these routes).
        async ({ caller: c, body, request }) => {
          const organizationId = await authorizeChannel(services.sql, c, body.channel_name);
          // An OAuth token's subscription names its grant too: it outlives the token (docs/events.md).
          const grantId = c.kind === "oauth" && c.sessionId !== null ? await grantOfAccessToken(services.sql, c.sessionId) : null;
          const grant = { organizationId, credential: credentialOf(c, request, grantId), ...(c.apiKey ? { permissions: c.apiKey.permissions } : {}) };
          await realtime.grants.put(body.socket_id, body.channel_name, grant);
          return { auth: signChannel(realtime.credentials.key, realtime.credentials.secret, body.socket_id, body.channel_name) };
        },
        {
          auth: { apiKey: "any" },
          body: ChannelAuthRequest,
          response: { 200: ChannelAuthResponse },
          detail: {
            tags,
            summary: "Authorize a private channel subscription",
            description: "Form-encoded (as pusher-js sends it) or JSON. 403 permission_denied when the caller may not join the channel.",
            // pusher-js posts its channel authorization form encoded.
            [BODY_MEDIA_TYPES]: [JSON_MEDIA_TYPE, FORM_MEDIA_TYPE],
          },
        },
      )
      .get(
        "/app/:key",
        ({ request, server, params, query }) => {
          if (!server || request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
            throw new AppError(426, "upgrade_required", "This is the WebSocket endpoint of the broadcaster; connect with a Pusher client.");
          }
          realtime.attach(server as never);
          const protocol = typeof query.protocol === "string" ? query.protocol : null;
          const address = clientAddress(server, request);
          if (server.upgrade(request, { data: realtime.socketData(params.key, protocol, address) })) return;
          throw new AppError(400, "malformed_body", "WebSocket upgrade failed.");
        },
        { detail: { tags, summary: "Pusher Channels protocol 7 WebSocket (upgrade only)" } },
      )
  );
}
