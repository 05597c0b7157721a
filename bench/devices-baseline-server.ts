/**
 * The device benchmarks' baseline: bare Elysia routes validating the same bodies with the same
 * schemas (a heartbeat, an SMS submission), answering the same shapes; no authentication, no
 * actor, no database. Beside it the app's
 * most trivial route (the OAuth metadata document: no authentication, no body, no database),
 * answering the same JSON, so the app's cost for that route less this one is what the app's
 * global hooks cost.
 */
import { Elysia } from "elysia";
import { Heartbeat, HeartbeatAnswer, SmsAccepted, SubmitSms } from "../server/devices/schema";
import { authorizationServerMetadata } from "../server/oauth/routes";

const base = process.env.PUBLIC_URL ?? "";

new Elysia()
  .get("/ready", () => "ok")
  .get("/.well-known/oauth-authorization-server", () => authorizationServerMetadata(base))
  .post("/api/byos/devices/:device/heartbeat", () => ({ success: true, next_heartbeat_in: 60, server_time: new Date().toISOString() }), {
    body: Heartbeat,
    response: { 200: HeartbeatAnswer },
  })
  .post(
    "/api/byos/devices/:device/sms",
    ({ body, set }) => {
      set.status = 202;
      return { message: "SMS accepted for processing.", message_id: body.message_id };
    },
    { body: SubmitSms, response: { 202: SmsAccepted } },
  )
  .listen({ port: Number(process.env.PORT), hostname: "127.0.0.1" });

// Stopped with SIGTERM (bench/devices-load.ts spawnServer): exit cleanly, so that a CPU profile
// asked for with BENCH_CPU_PROF is written, as the server's is.
process.on("SIGTERM", () => process.exit(0));
