import type { Sql } from "../db/client";
import { type DeviceStateEventType, type EventBuilder, event } from "../events/catalog";
import { appendEvents, type NewEvent } from "../events/log";
import type { DeviceEvent } from "../events/payloads";
import type { Retired, RetireReason } from "./retirement";
import { findDevice } from "./store";

/** The device events of a change (docs/events.md): one shape, the device's state after it. */
type DeviceBuilder = EventBuilder<DeviceStateEventType>;
export const DEVICE_NEWS = {
  disable: event.deviceDisabled,
  enable: event.deviceEnabled,
  revoke: event.deviceRevoked,
  update: event.deviceUpdated,
} satisfies Record<string, DeviceBuilder>;

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/**
 * Appends, in the change's transaction, events of the device after the change: `before` (SIM card
 * events), then each of `news` with the device's state, then `config.changed` when `config` is set.
 * The caller notifies the tail after the commit.
 */
export async function appendDeviceEvents(
  tx: Sql,
  organizationId: number,
  deviceId: number,
  at: number,
  o: { before?: NewEvent[]; news?: DeviceBuilder[]; config?: boolean },
): Promise<void> {
  const d = await findDevice(tx, organizationId, deviceId);
  if (!d) return;
  const scope = { organizationId, deviceId };
  const state: DeviceEvent = {
    device_id: d.id,
    organization_id: d.organization_id,
    status: d.status,
    is_online: d.is_online,
    last_seen_at: iso(d.last_seen_at),
    changed_at: new Date(at).toISOString(),
    config_version: d.config_version,
  };
  const events = [...(o.before ?? []), ...(o.news ?? []).map((build) => build(scope, state))];
  if (o.config) events.push(event.configChanged(scope, { device_id: deviceId, config_version: d.config_version }));
  await appendEvents(tx, events);
}

/** `sim.deactivated` per card retired (then the caller's `device.updated` and `config.changed`). */
export function retiredEvents(organizationId: number, deviceId: number, retired: Retired, reason: RetireReason): NewEvent[] {
  return retired.cards.map((c) =>
    event.simDeactivated(
      { organizationId, deviceId, hostedSimId: c.hosted_sim_id },
      {
        device_id: deviceId,
        sim_card: { id: c.id, sim_slot: c.sim_slot, phone_number: c.phone_number, status: "inactive", hosted_sim_id: c.hosted_sim_id },
        reason,
      },
    ),
  );
}
