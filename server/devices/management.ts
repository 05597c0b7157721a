import type postgres from "postgres";
import type { Pool } from "../db/client";
import { invalidState, notFound } from "../errors";
import type { Clock } from "../lib/clock";
import { deactivateHostedSims } from "../numbers/byos-store";
import type { Publish } from "../realtime/bus";
import type { DeviceActors } from "./actor";
import { claimNumber } from "./registration";
import { announceRetired, retireCards } from "./retirement";
import { DEVICE_STATUS_CHANNEL, type DeviceStatusNews, deviceChannels } from "./runtime";
import type { UpdateDevice, UpdateSimCard } from "./schema";
import {
  bumpConfigVersion,
  type DeviceRow,
  findCardInSlot,
  findDevice,
  findSimCard,
  moveSimCard,
  revokeDevice,
  type SimCardRow,
  setDeviceStatus,
  simCardsOf,
  updateDeviceFields,
} from "./store";
import { assertEditable, invalidStateIf, requireDeviceMove } from "./transitions";

type Deps = { sql: Pool; clock: Clock; actors: DeviceActors; publish: Publish; providerNumber: string };

/** Serialises on the device's actor and runs `fn` in a transaction holding the device row. */
async function onDevice<T>(deps: Deps, organizationId: number, deviceId: number, fn: (tx: postgres.TransactionSql) => Promise<T>) {
  const state = await deps.actors.require(deviceId, organizationId);
  return deps.actors.run(state, async () => {
    const result = await deps.sql.begin(async (tx) => {
      const device = await findDevice(tx, organizationId, deviceId, { forUpdate: true });
      if (!device) throw notFound("Device");
      return fn(tx);
    });
    const after = await findDevice(deps.sql, organizationId, deviceId);
    if (after && after.status !== state.status) {
      state.status = after.status;
      deps.publish(DEVICE_STATUS_CHANNEL, "status", { device_id: deviceId, status: after.status } satisfies DeviceStatusNews);
    }
    return result;
  });
}

function announce(deps: Deps, organizationId: number, deviceId: number, configVersion: number) {
  const channels = deviceChannels({ id: deviceId, organizationId });
  deps.publish(channels, "device.updated", { device_id: deviceId, config_version: configVersion });
  deps.publish(`private-device.${deviceId}`, "config.changed", { device_id: deviceId, config_version: configVersion });
}

/**
 * The card a device's phone_number stands for: the card that has the device's number, else its
 * first live card by slot (a device not verified yet).
 */
function primaryCard(device: DeviceRow, cards: SimCardRow[]) {
  const live = cards.filter((c) => c.status !== "inactive");
  return live.find((c) => c.phone_number !== null && c.phone_number === device.phone_number) ?? live[0] ?? null;
}

/**
 * SPEC.md 4.2 update. A different phone_number is a claim on the primary card (claimNumber):
 * answered with the card that carries the new code; the device's number changes only when the
 * claim is proven. Answers the id of that card, or null.
 */
export async function updateDevice(deps: Deps, organizationId: number, deviceId: number, body: UpdateDevice): Promise<number | null> {
  const { changed, claimed } = await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    assertEditable(device.status);
    let claimed: SimCardRow | null = null;
    if (body.phone_number && body.phone_number !== device.phone_number) {
      const card = primaryCard(device, await simCardsOf(tx, [deviceId]));
      if (!card) throw invalidState("This device has no live SIM card whose number could change.");
      claimed = await claimNumber(tx, deps, (await findSimCard(tx, deviceId, card.id, { forUpdate: true }))!, body.phone_number);
    }
    // config_version counts changes: a PATCH that changes nothing leaves it as it is.
    const fields = { device_name: body.device_name, app_version: body.app_version };
    const changed = claimed !== null || (Object.keys(fields) as (keyof typeof fields)[]).some((k) => fields[k] !== undefined && fields[k] !== device[k]);
    if (changed) await updateDeviceFields(tx, deviceId, fields);
    return { changed, claimed };
  });
  await finish(deps, organizationId, deviceId, changed);
  return claimed?.id ?? null;
}

async function finish(deps: Deps, organizationId: number, deviceId: number, changed = true) {
  const device = (await findDevice(deps.sql, organizationId, deviceId))!;
  if (changed) announce(deps, organizationId, deviceId, device.config_version);
  return device;
}

/** SPEC.md 3.1 enable/disable. */
export async function changeDeviceStatus(deps: Deps, organizationId: number, deviceId: number, op: "enable" | "disable") {
  await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    await setDeviceStatus(tx, deviceId, requireDeviceMove(device.status, op));
  });
  return finish(deps, organizationId, deviceId);
}

/** API.md revoke: final; the device stops counting as online, its timers go, numbers/ deactivates its hosted SIMs. */
export async function revokeDeviceById(deps: Deps, organizationId: number, deviceId: number) {
  const state = await deps.actors.require(deviceId, organizationId);
  const wasOnline = await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    requireDeviceMove(device.status, "revoke");
    await deactivateHostedSims(tx, await revokeDevice(tx, deviceId));
    return device.is_online;
  });
  deps.actors.revoked(state);
  if (wasOnline) {
    deps.publish(deviceChannels(state), "device.status_changed", { device_id: deviceId, organization_id: organizationId, status: "revoked", is_online: false });
  }
  await finish(deps, organizationId, deviceId);
}

/**
 * SPEC.md 4.2 update SIM card: slot moves, and claims of a new number (claimNumber; the number
 * itself changes only by proof). Answers the card and whether this request issued its code.
 */
export async function updateSimCard(deps: Deps, organizationId: number, deviceId: number, cardId: number, body: UpdateSimCard) {
  const claimed = await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    const card = await findSimCard(tx, deviceId, cardId, { forUpdate: true });
    if (!card) throw notFound("SIM card");
    assertEditable(device.status);
    if (typeof body.sim_slot === "number" && body.sim_slot !== card.sim_slot) {
      const taken = await findCardInSlot(tx, deviceId, body.sim_slot, new Date(deps.clock.now()));
      invalidStateIf(!!taken && taken.id !== cardId, `Slot ${body.sim_slot} already holds a SIM card of this device.`);
    }
    if (body.sim_slot !== undefined) await moveSimCard(tx, cardId, body.sim_slot);
    const claimed = body.phone_number ? await claimNumber(tx, deps, card, body.phone_number) : null;
    await bumpConfigVersion(tx, deviceId);
    return claimed !== null;
  });
  await finish(deps, organizationId, deviceId);
  return { card: (await findSimCard(deps.sql, deviceId, cardId))!, issued: claimed };
}

/**
 * A member takes a SIM card out of service (POST .../sims/{simCard}/deactivate): it goes inactive
 * and its number stops receiving (retireCards); a reissued code brings it back by proof. Refused
 * (409) on an inactive card and on a revoked device.
 */
export async function deactivateSimCard(deps: Deps, organizationId: number, deviceId: number, cardId: number) {
  const retired = await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    const card = await findSimCard(tx, deviceId, cardId, { forUpdate: true });
    if (!card) throw notFound("SIM card");
    assertEditable(device.status);
    invalidStateIf(card.status === "inactive", "This SIM card is already inactive.");
    return (await retireCards(tx, deviceId, [cardId]))!;
  });
  announceRetired(deps.publish, deviceChannels({ id: deviceId, organizationId }), deviceId, retired, "deactivated");
  return retired.cards[0]!;
}
