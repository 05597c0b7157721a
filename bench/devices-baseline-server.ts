/**
 * The heartbeat benchmark's baseline: a bare Elysia route validating the same body with the same
 * schema, answering the same shape; no authentication, no actor, no database.
 */
import { Elysia } from "elysia";
import { Heartbeat, HeartbeatAnswer } from "../server/devices/schema";

new Elysia()
  .get("/ready", () => "ok")
  .post("/api/byos/devices/:device/heartbeat", () => ({ success: true, next_heartbeat_in: 60, server_time: new Date().toISOString() }), {
    body: Heartbeat,
    response: { 200: HeartbeatAnswer },
  })
  .listen({ port: Number(process.env.PORT), hostname: "127.0.0.1" });
