import type { Sql } from "../db/client";
import { countLiveDevices, planOf } from "../devices/store";
import { monthlyOutboundCount } from "../messages/store";

/**
 * What an organization uses of its plan, counted the way the limits are enforced: devices not
 * revoked (registration's max_devices) and this UTC month's outbound messages that were not
 * cancelled or expired (the send quota, monthly_messages).
 */
export async function planUsage(sql: Sql, organizationId: number) {
  const [plan, devices, messages] = await Promise.all([
    planOf(sql, organizationId),
    countLiveDevices(sql, organizationId),
    monthlyOutboundCount(sql, organizationId),
  ]);
  return { plan, devices, messages };
}

/** The UTC calendar month holding `now`, over which monthly_messages is counted. */
export function quotaPeriod(now: number) {
  const d = new Date(now);
  return { start: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)), end: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)) };
}
