import type postgres from "postgres";
import type { Pool } from "../db/client";
import { invalidState, notFound } from "../errors";
import type { Bus } from "../events/bus";
import type { EventTail } from "../events/tail";
import { enqueueJobs } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import type { DeviceActors } from "./actor";
import { appendDeviceEvents, DEVICE_NEWS } from "./announce";
import { claimNumber } from "./registration";
import { endService, retireCards } from "./retirement";
import { DEVICE_STATUS_CHANNEL, type DeviceStatusNews } from "./runtime";
import type { UpdateDevice, UpdateSimCard } from "./schema";
import { processWaitingSmsIn } from "./sms-process";
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

type Deps = { sql: Pool; clock: Clock; actors: DeviceActors; bus: Pick<Bus, "publish">; events: Pick<EventTail, "notify">; providerNumber: string };

/**
 * Serialises on the device's actor and runs `fn` in a transaction holding the device row; `fn`
 * appends the change's events in it (appendDeviceEvents), and the tail is told after the commit.
 */
async function onDevice<T>(deps: Deps, organizationId: number, deviceId: number, fn: (tx: postgres.TransactionSql) => Promise<T>) {
  const state = await deps.actors.require(deviceId, organizationId);
  return deps.actors.run(state, async () => {
    const result = await deps.sql.begin(async (tx) => {
      const device = await findDevice(tx, organizationId, deviceId, { forUpdate: true });
      if (!device) throw notFound("Device");
      return fn(tx);
    });
    deps.events.notify();
    const after = await findDevice(deps.sql, organizationId, deviceId);
    if (after && after.status !== state.status) {
      state.status = after.status;
      // Internal news for the other instances' actors of this device (not an event of the log).
      deps.bus.publish(DEVICE_STATUS_CHANNEL, "status", { device_id: deviceId, status: after.status } satisfies DeviceStatusNews);
    }
    return result;
  });
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
  const { claimed } = await onDevice(deps, organizationId, deviceId, async (tx) => {
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
    if (changed) {
      await updateDeviceFields(tx, deviceId, fields);
      await appendDeviceEvents(tx, organizationId, deviceId, deps.clock.now(), { news: [DEVICE_NEWS.update], config: true });
    }
    return { changed, claimed };
  });
  return claimed?.id ?? null;
}

/** SPEC.md 3.1 enable/disable. */
export async function changeDeviceStatus(deps: Deps, organizationId: number, deviceId: number, op: "enable" | "disable") {
  await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    await setDeviceStatus(tx, deviceId, requireDeviceMove(device.status, op));
    await appendDeviceEvents(tx, organizationId, deviceId, deps.clock.now(), { news: [DEVICE_NEWS[op]], config: true });
    // The sends that waited for it go now, as when it comes back online (a phone that stayed
    // online through the disable sends no heartbeat that would bring it back).
    if (op === "enable") await enqueueJobs(tx, "message.outbound.device-online", tx`select jsonb_build_object('device_id', ${deviceId}::bigint)`);
  });
  return (await findDevice(deps.sql, organizationId, deviceId))!;
}

/**
 * API.md revoke: final; the device stops counting as online, its timers go, the SMS it relayed
 * still waiting become messages, and its numbers stop being served (`endService`).
 */
export async function revokeDeviceById(deps: Deps, organizationId: number, deviceId: number) {
  const state = await deps.actors.require(deviceId, organizationId);
  await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    requireDeviceMove(device.status, "revoke");
    // Its cards stop serving its numbers: the SMS it relayed that wait for processing go first.
    await processWaitingSmsIn(tx, deviceId);
    await endService(tx, await revokeDevice(tx, deviceId));
    await appendDeviceEvents(tx, organizationId, deviceId, deps.clock.now(), { news: [DEVICE_NEWS.revoke], config: true });
  });
  deps.actors.revoked(state);
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
    const slot = body.sim_slot === undefined ? card.sim_slot : body.sim_slot;
    const moved = slot !== card.sim_slot;
    if (moved) await moveSimCard(tx, cardId, slot);
    // The claim judges the card where this request leaves it (its slot moved first).
    const claimed = body.phone_number ? await claimNumber(tx, deps, { ...card, sim_slot: slot }, body.phone_number) : null;
    // config_version grows only on a change (docs/api-notes.md): a PATCH that moves nothing and
    // claims nothing new leaves it, and announces nothing, as the device's own PATCH does.
    if (moved || claimed !== null) {
      await bumpConfigVersion(tx, deviceId);
      await appendDeviceEvents(tx, organizationId, deviceId, deps.clock.now(), { news: [DEVICE_NEWS.update], config: true });
    }
    return claimed !== null;
  });
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
    return (await retireCards(tx, deviceId, [cardId], { organizationId, reason: "deactivated", at: deps.clock.now() }))!;
  });
  return retired.cards[0]!;
}
