import type { Pool, Sql } from "../db/client";
import { reconsiderSends } from "../messages/pacer";
import { deactivateHostedSims } from "../numbers/byos-store";
import { appendDeviceEvents, DEVICE_NEWS, retiredEvents } from "./announce";
import { MISSED_HEARTBEATS_TO_INACTIVE } from "./presence-store";
import { bumpConfigVersion, lockLiveDevice, retireSimCards, type SimCardRow } from "./store";
import type { SimCardStatus } from "./transitions";

/** Why a SIM card went inactive (the `reason` of `sim.deactivated`). */
export type RetireReason = "missing_from_heartbeats" | "deactivated";

export type Retired = { cards: SimCardRow[]; configVersion: number };

/** Who retires, why and when: the events of the retirement name them. */
export type RetireContext = { organizationId: number; reason: RetireReason; at: number };

/**
 * SIM cards leave service (docs/api-notes.md "Device SIM cards"): inactive, codes and claims
 * spent, and their numbers stop being served (`endService`: no SMS received, no send waiting on
 * them) until a card proves the number again. The device's config moves on, and
 * `sim.deactivated` per card, `device.updated` and `config.changed` are appended (docs/events.md).
 * Call inside a transaction holding the device row, on the device's actor. Null when no card moved.
 */
export async function retireCards(
  tx: Sql,
  deviceId: number,
  cardIds: number[],
  ctx: RetireContext,
  opts: { missedAtLeast?: number } = {},
): Promise<Retired | null> {
  const cards = await retireSimCards(tx, deviceId, cardIds, opts);
  if (cards.length === 0) return null;
  await endService(tx, cards);
  const configVersion = await bumpConfigVersion(tx, deviceId);
  const retired = { cards: cards.map(({ was: _, ...card }) => card), configVersion };
  await appendDeviceEvents(tx, ctx.organizationId, deviceId, ctx.at, {
    before: retiredEvents(ctx.organizationId, deviceId, retired, ctx.reason),
    news: [DEVICE_NEWS.update],
    config: true,
  });
  return retired;
}

/**
 * Retired cards' numbers stop being served: numbers/ deactivates the hosted SIMs of the ones that
 * were active (an inactive card's hosted SIM may serve another card by now), and messages/ ends
 * the sends these cards will never send (messages/pacer.ts reconsiderSends: those handed to the
 * phone and not taken up fail at once; those still waiting fail or move within their sender pool)
 * so they neither wait forever nor hold up the number's next holder.
 */
export async function endService(tx: Sql, cards: { hosted_sim_id: number | null; was: SimCardStatus }[]) {
  await deactivateHostedSims(
    tx,
    cards.flatMap((c) => (c.was === "active" && c.hosted_sim_id !== null ? [c.hosted_sim_id] : [])),
  );
  await reconsiderSends(
    tx,
    cards.flatMap((c) => (c.hosted_sim_id === null ? [] : [c.hosted_sim_id])),
  );
}

/**
 * Heartbeats stopped listing these active cards (presence-store.ts MISSED_HEARTBEATS_TO_INACTIVE):
 * they go inactive, unless a heartbeat listed them again meanwhile or the device was revoked.
 */
export function retireMissingCards(sql: Pool, deviceId: number, cardIds: number[], ctx: Omit<RetireContext, "reason">): Promise<Retired | null> {
  return sql.begin(async (tx) => {
    if (!(await lockLiveDevice(tx, deviceId))) return null;
    return retireCards(tx, deviceId, cardIds, { ...ctx, reason: "missing_from_heartbeats" }, { missedAtLeast: MISSED_HEARTBEATS_TO_INACTIVE });
  });
}
