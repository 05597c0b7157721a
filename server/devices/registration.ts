import type postgres from "postgres";
import type { Pool } from "../db/client";
import { AppError, notFound } from "../errors";
import type { Clock } from "../lib/clock";
import { CODE_LIFETIME_MS, newVerificationCode } from "./codes";
import type { RegisterDevice } from "./schema";
import {
  bumpConfigVersion,
  countLiveDevices,
  findCardInSlot,
  findDevice,
  findLiveDeviceByAndroidId,
  findSimCard,
  insertDevice,
  insertSimCard,
  isUniqueViolation,
  planOf,
  releaseExpiredCode,
  type SimCardRow,
  setSimCardCode,
} from "./store";
import { assertCodeReissuable, assertEditable, invalidStateIf } from "./transitions";

type Tx = postgres.TransactionSql;
type Deps = { sql: Pool; clock: Clock };

/**
 * Writes a card with a fresh code. Codes are unique (unique index): a collision with a live code
 * retries with another, a collision with an expired one frees it first.
 */
async function withNewCode(tx: Tx, now: Date, write: (code: string, expiresAt: Date) => Promise<SimCardRow>) {
  const expiresAt = new Date(now.getTime() + CODE_LIFETIME_MS);
  for (let attempt = 0; attempt < 10; attempt++) {
    const code = newVerificationCode();
    await releaseExpiredCode(tx, code, now);
    try {
      return await tx.savepoint(() => write(code, expiresAt));
    } catch (e) {
      if (!isUniqueViolation(e, "sim_cards_verification_code_key")) throw e;
    }
  }
  throw new AppError(503, "unavailable", "No verification code could be issued right now; try again shortly.");
}

/** SPEC.md 4.2 register: plan limit and duplicate checks under the organization's row lock. */
export async function registerDevice(deps: Deps, who: { organizationId: number; userId: number | null }, body: RegisterDevice) {
  return deps.sql.begin(async (tx) => {
    const plan = await planOf(tx, who.organizationId, { lock: true });
    const existing = await findLiveDeviceByAndroidId(tx, who.organizationId, body.android_id);
    if (existing) {
      throw new AppError(409, "device_already_registered", "A device with this android_id is already registered in the organization.", {
        device_id: existing.id,
      });
    }
    if ((await countLiveDevices(tx, who.organizationId)) >= plan.max_devices) {
      throw new AppError(402, "plan_limit_reached", `The ${plan.name} plan allows ${plan.max_devices} devices; revoke one or upgrade the plan.`);
    }
    const id = await insertDevice(tx, {
      organizationId: who.organizationId,
      androidId: body.android_id,
      deviceName: body.device_name ?? null,
      deviceModel: body.device_model,
      appVersion: body.app_version,
      createdBy: who.userId,
    });
    const now = new Date(deps.clock.now());
    const cards: SimCardRow[] = [];
    for (const slot of body.sim_slots) cards.push(await withNewCode(tx, now, (code, exp) => insertSimCard(tx, id, slot, code, exp)));
    return { device: (await findDevice(tx, who.organizationId, id))!, cards };
  });
}

export async function addSimCard(deps: Deps, organizationId: number, deviceId: number, slot: number) {
  return deps.sql.begin(async (tx) => {
    const device = await findDevice(tx, organizationId, deviceId, { forUpdate: true });
    if (!device) throw notFound("Device");
    assertEditable(device.status);
    invalidStateIf(!!(await findCardInSlot(tx, deviceId, slot)), `Slot ${slot} already holds a SIM card of this device.`);
    const card = await withNewCode(tx, new Date(deps.clock.now()), (code, exp) => insertSimCard(tx, deviceId, slot, code, exp));
    await bumpConfigVersion(tx, deviceId);
    return card;
  });
}

/** SPEC.md 3.2 reissue: the new code replaces the old one, which stops working at once. */
export async function reissueCode(deps: Deps, organizationId: number, deviceId: number, cardId: number) {
  return deps.sql.begin(async (tx) => {
    const device = await findDevice(tx, organizationId, deviceId, { forUpdate: true });
    if (!device) throw notFound("Device");
    const card = await findSimCard(tx, deviceId, cardId, { forUpdate: true });
    if (!card) throw notFound("SIM card");
    assertCodeReissuable(card.status);
    assertEditable(device.status);
    return withNewCode(tx, new Date(deps.clock.now()), (code, exp) => setSimCardCode(tx, cardId, code, exp));
  });
}
