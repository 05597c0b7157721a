import type postgres from "postgres";
import type { Pool } from "../db/client";
import { invalidState, notFound } from "../errors";
import type { Publish } from "../realtime/bus";
import type { DeviceActors } from "./actor";
import { DEVICE_STATUS_CHANNEL, type DeviceStatusNews, deviceChannels } from "./runtime";
import type { UpdateDevice, UpdateSimCard } from "./schema";
import {
  bumpConfigVersion,
  findCardInSlot,
  findDevice,
  findSimCard,
  isUniqueViolation,
  revokeDevice,
  setDeviceStatus,
  simCardsOf,
  syncHostedSimNumber,
  updateDeviceFields,
  updateSimCardFields,
} from "./store";
import { assertEditable, invalidStateIf, requireDeviceMove } from "./transitions";

type Deps = { sql: Pool; actors: DeviceActors; publish: Publish };

/** A number already held by another SIM card or hosted SIM is a refused state, not a server error. */
async function numberChange<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isUniqueViolation(e)) throw invalidState("That phone number is already in use by another SIM.");
    throw e;
  }
}

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

/** SPEC.md 4.2 update: a new phone number follows to the device's card and its hosted SIM. */
export async function updateDevice(deps: Deps, organizationId: number, deviceId: number, body: UpdateDevice) {
  const changed = await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    assertEditable(device.status);
    if (body.phone_number && body.phone_number !== device.phone_number) {
      const cards = (await simCardsOf(tx, [deviceId])).filter((c) => c.status === "active");
      const card = cards.find((c) => c.phone_number === device.phone_number) ?? cards[0];
      if (card) {
        await numberChange(async () => {
          await tx.savepoint(async (sp) => {
            await updateSimCardFields(sp, card.id, { phone_number: body.phone_number });
            if (card.hosted_sim_id) await syncHostedSimNumber(sp, card.hosted_sim_id, body.phone_number!);
          });
        });
      }
    }
    // config_version counts changes: a PATCH that changes nothing leaves it as it is.
    const changed = (Object.keys(body) as (keyof UpdateDevice)[]).some((k) => body[k] !== undefined && body[k] !== device[k]);
    if (changed) await updateDeviceFields(tx, deviceId, body);
    return changed;
  });
  return finish(deps, organizationId, deviceId, changed);
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

/** API.md revoke: final; the device stops counting as online and its timers go. */
export async function revokeDeviceById(deps: Deps, organizationId: number, deviceId: number) {
  const state = await deps.actors.require(deviceId, organizationId);
  const wasOnline = await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    requireDeviceMove(device.status, "revoke");
    await revokeDevice(tx, deviceId);
    return device.is_online;
  });
  deps.actors.revoked(state);
  if (wasOnline) {
    deps.publish(deviceChannels(state), "device.status_changed", { device_id: deviceId, organization_id: organizationId, status: "revoked", is_online: false });
  }
  await finish(deps, organizationId, deviceId);
}

/** SPEC.md 4.2 update SIM card: slot moves and number changes (synced to the hosted SIM). */
export async function updateSimCard(deps: Deps, organizationId: number, deviceId: number, cardId: number, body: UpdateSimCard) {
  await onDevice(deps, organizationId, deviceId, async (tx) => {
    const device = (await findDevice(tx, organizationId, deviceId))!;
    const card = await findSimCard(tx, deviceId, cardId, { forUpdate: true });
    if (!card) throw notFound("SIM card");
    assertEditable(device.status);
    if (typeof body.sim_slot === "number" && body.sim_slot !== card.sim_slot) {
      const taken = await findCardInSlot(tx, deviceId, body.sim_slot);
      invalidStateIf(!!taken && taken.id !== cardId, `Slot ${body.sim_slot} already holds a SIM card of this device.`);
    }
    await numberChange(() =>
      tx.savepoint(async (sp) => {
        await updateSimCardFields(sp, cardId, body);
        if (body.phone_number && card.hosted_sim_id && body.phone_number !== card.phone_number) {
          await syncHostedSimNumber(sp, card.hosted_sim_id, body.phone_number);
        }
      }),
    );
    await bumpConfigVersion(tx, deviceId);
  });
  await finish(deps, organizationId, deviceId);
  return (await findSimCard(deps.sql, deviceId, cardId))!;
}
