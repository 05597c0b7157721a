import type { Sql } from "../db/client";
import { iso } from "../lib/clock";
import { planUsage } from "../usage/usage";
import type { DeviceRow } from "./store";

/** API.md device config defaults. */
export const CONFIG_REFRESH_SECONDS = 3600;
export const RETRY_BACKOFF_SECONDS = [5, 15, 60, 300];

/** SPEC.md 2.12, limits counted from the database at the time of the request. */
export async function buildDeviceConfig(sql: Sql, device: DeviceRow, o: { heartbeatSeconds: number; now: number }) {
  const { plan, devices, messages: used } = await planUsage(sql, device.organization_id);
  return {
    device: { id: device.id, phone_number: device.phone_number, status: device.status },
    intervals: { heartbeat_seconds: o.heartbeatSeconds, config_refresh_seconds: CONFIG_REFRESH_SECONDS, retry_backoff_seconds: RETRY_BACKOFF_SECONDS },
    limits: {
      max_devices: plan.max_devices,
      current_devices: devices,
      monthly_messages: plan.monthly_messages,
      current_month_messages: used,
      remaining_messages: Math.max(0, plan.monthly_messages - used),
    },
    features: { compression: plan.compression, priority_support: plan.priority_support, debug_mode: plan.debug_mode },
    metadata: { config_version: device.config_version, server_time: iso(o.now), plan_name: plan.name },
  };
}
