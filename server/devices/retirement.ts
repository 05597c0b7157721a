import type { Pool, Sql } from "../db/client";
import { deactivateHostedSims } from "../numbers/byos-store";
import type { Publish } from "../realtime/bus";
import { MISSED_HEARTBEATS_TO_INACTIVE } from "./presence-store";
import { bumpConfigVersion, lockLiveDevice, retireSimCards, type SimCardRow } from "./store";

/** Why a SIM card went inactive (the `reason` of `sim.deactivated`). */
export type RetireReason = "missing_from_heartbeats" | "deactivated";

export type Retired = { cards: SimCardRow[]; configVersion: number };

/**
 * SIM cards leave service (docs/api-notes.md "Device SIM cards"): inactive, codes and claims
 * spent, and numbers/ deactivates the hosted SIMs of the ones that were active, so their numbers
 * stop receiving until a card proves the number again. The device's config moves on. Call inside
 * a transaction holding the device row, on the device's actor. Null when no card moved.
 */
export async function retireCards(tx: Sql, deviceId: number, cardIds: number[], opts: { missedAtLeast?: number } = {}): Promise<Retired | null> {
  const cards = await retireSimCards(tx, deviceId, cardIds, opts);
  if (cards.length === 0) return null;
  await deactivateHostedSims(
    tx,
    cards.flatMap((c) => (c.was === "active" && c.hosted_sim_id !== null ? [c.hosted_sim_id] : [])),
  );
  const configVersion = await bumpConfigVersion(tx, deviceId);
  return { cards: cards.map(({ was: _, ...card }) => card), configVersion };
}

/**
 * Heartbeats stopped listing these active cards (presence-store.ts MISSED_HEARTBEATS_TO_INACTIVE):
 * they go inactive, unless a heartbeat listed them again meanwhile or the device was revoked.
 */
export function retireMissingCards(sql: Pool, deviceId: number, cardIds: number[]): Promise<Retired | null> {
  return sql.begin(async (tx) => {
    if (!(await lockLiveDevice(tx, deviceId))) return null;
    return retireCards(tx, deviceId, cardIds, { missedAtLeast: MISSED_HEARTBEATS_TO_INACTIVE });
  });
}

/** `sim.deactivated` per card, then `device.updated` and `config.changed` (docs/events.md). */
export function announceRetired(publish: Publish, channels: string[], deviceId: number, retired: Retired, reason: RetireReason) {
  for (const c of retired.cards) {
    publish(channels, "sim.deactivated", {
      device_id: deviceId,
      sim_card: { id: c.id, sim_slot: c.sim_slot, phone_number: c.phone_number, status: "inactive", hosted_sim_id: c.hosted_sim_id },
      reason,
    });
  }
  publish(channels, "device.updated", { device_id: deviceId, config_version: retired.configVersion });
  publish(`private-device.${deviceId}`, "config.changed", { device_id: deviceId, config_version: retired.configVersion });
}
