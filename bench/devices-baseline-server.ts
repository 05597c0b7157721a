/**
 * The heartbeat benchmark's baseline: a bare Elysia route validating the same body with the same
 * schema, answering the same shape; no authentication, no actor, no database. Beside it the app's
 * most trivial route (the OAuth metadata document: no authentication, no body, no database),
 * answering the same JSON, so the app's cost for that route less this one is what the app's
 * global hooks cost.
 */
import { Elysia } from "elysia";
import { Heartbeat, HeartbeatAnswer } from "../server/devices/schema";
import { authorizationServerMetadata } from "../server/oauth/routes";

const base = process.env.PUBLIC_URL ?? "";

new Elysia()
  .get("/ready", () => "ok")
  .get("/.well-known/oauth-authorization-server", () => authorizationServerMetadata(base))
  .post("/api/byos/devices/:device/heartbeat", () => ({ success: true, next_heartbeat_in: 60, server_time: new Date().toISOString() }), {
    body: Heartbeat,
    response: { 200: HeartbeatAnswer },
  })
  .listen({ port: Number(process.env.PORT), hostname: "127.0.0.1" });
