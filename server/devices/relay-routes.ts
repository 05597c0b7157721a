import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { iso } from "../lib/clock";
import type { Services } from "../services";
import { buildDeviceConfig } from "./device-config";
import { canonicalUuid, DeviceConfig, DeviceParams, Heartbeat, HeartbeatAnswer, SmsAccepted, SubmitSms } from "./schema";
import { findDevice } from "./store";

type Deps = Pick<Services, "auth" | "sql" | "clock" | "devices">;
const tags = ["BYOS devices"];

/** What the companion app calls all day: config, heartbeats and the SMS relay (outbound status reports: server/messages/routes.ts). */
export function relayRoutes(services: Deps) {
  const { sql, clock, devices } = services;
  const { actors } = devices;

  return new Elysia()
    .use(callerPlugin(services.auth))
    .get(
      "/api/byos/devices/:device/config",
      async ({ caller: c, params }) => {
        const device = await findDevice(sql, c.organization.id, params.device);
        if (!device) throw notFound("Device");
        return buildDeviceConfig(sql, device, { heartbeatSeconds: devices.nextHeartbeatIn(device.is_in_doze_mode), now: clock.now() });
      },
      { auth: { apiKey: "session_only" }, params: DeviceParams, response: { 200: DeviceConfig }, detail: { tags, summary: "Device configuration" } },
    )
    .post(
      "/api/byos/devices/:device/heartbeat",
      async ({ caller: c, params, body }) => {
        const state = await actors.require(params.device, c.organization.id);
        const doze = body.is_in_doze_mode ?? false;
        await actors.heartbeat(state, { doze, batteryLevel: body.battery_level, signalStrength: body.signal_strength, simCards: body.sim_cards });
        return { success: true, next_heartbeat_in: devices.nextHeartbeatIn(doze), server_time: iso(clock.now()) };
      },
      { auth: { apiKey: "session_only" }, params: DeviceParams, body: Heartbeat, response: { 200: HeartbeatAnswer }, detail: { tags, summary: "Heartbeat" } },
    )
    .post(
      "/api/byos/devices/:device/sms",
      async ({ caller: c, params, body, set }) => {
        const state = await actors.require(params.device, c.organization.id);
        // SMS wait for state changes already queued on the device (a disable in flight wins); the
        // status itself is checked by the insert, against the database, not this instance's copy.
        await actors.settled(state);
        await devices.sms.submit({
          deviceId: state.id,
          messageId: canonicalUuid(body.message_id),
          simSlot: body.sim_slot ?? null,
          from: body.from,
          body: body.body,
          receivedAt: body.received_at ?? iso(clock.now()),
        });
        set.status = 202;
        return { message: "SMS accepted for processing.", message_id: body.message_id };
      },
      {
        auth: { apiKey: "session_only" },
        params: DeviceParams,
        body: SubmitSms,
        response: { 202: SmsAccepted },
        detail: { tags, summary: "Submit a received SMS" },
      },
    );
}
