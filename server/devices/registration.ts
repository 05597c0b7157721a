import type postgres from "postgres";
import { isUniqueViolation, type Pool } from "../db/client";
import { AppError, notFound, validationFailed } from "../errors";
import type { Clock } from "../lib/clock";
import { isPoolNumber } from "../numbers/byos-store";
import { appendDeviceEvents, DEVICE_NEWS } from "./announce";
import { CODE_LIFETIME_MS, newVerificationCode } from "./codes";
import type { RegisterDevice } from "./schema";
import {
  bumpConfigVersion,
  countLiveDevices,
  findActiveCardByNumber,
  findCardInSlot,
  findDevice,
  findLiveDeviceByAndroidId,
  findSimCard,
  insertDevice,
  insertSimCard,
  planOf,
  releaseExpiredCode,
  type SimCardRow,
  setSimCardClaim,
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
    const now = new Date(deps.clock.now());
    invalidStateIf(!!(await findCardInSlot(tx, deviceId, slot, now)), `Slot ${slot} already holds a SIM card of this device.`);
    const card = await withNewCode(tx, now, (code, exp) => insertSimCard(tx, deviceId, slot, code, exp));
    await bumpConfigVersion(tx, deviceId);
    await appendDeviceEvents(tx, organizationId, deviceId, now.getTime(), { news: [DEVICE_NEWS.update], config: true });
    return card;
  });
}

/**
 * SPEC.md 3.2 reissue: the new code replaces the old one, which stops working at once. On an
 * inactive card it starts re-verification: the card stays inactive until an SMS carrying the code
 * proves a number (verification.ts), and holds its slot meanwhile (findCardInSlot). Refused on a
 * revoked device's card, and on an inactive card whose slot another card holds now.
 */
export async function reissueCode(deps: Deps, organizationId: number, deviceId: number, cardId: number) {
  return deps.sql.begin(async (tx) => {
    const device = await findDevice(tx, organizationId, deviceId, { forUpdate: true });
    if (!device) throw notFound("Device");
    const card = await findSimCard(tx, deviceId, cardId, { forUpdate: true });
    if (!card) throw notFound("SIM card");
    assertCodeReissuable(card.status);
    assertEditable(device.status);
    const now = new Date(deps.clock.now());
    await assertSlotFree(tx, card, now);
    return withNewCode(tx, now, (code, exp) => setSimCardCode(tx, cardId, code, exp));
  });
}

/**
 * An inactive card gets a code (a reissue, or a claim of a number) only while no other card holds
 * its slot: proven, it would be a second active card in one slot, and the device's SMS of that
 * slot would all go to one of them.
 */
async function assertSlotFree(tx: Tx, card: Pick<SimCardRow, "id" | "device_id" | "sim_slot" | "status">, now: Date) {
  if (card.status !== "inactive" || card.sim_slot === null) return;
  const holder = await findCardInSlot(tx, card.device_id, card.sim_slot, now);
  invalidStateIf(!!holder && holder.id !== card.id, `Slot ${card.sim_slot} now holds another SIM card of this device; move this card first.`);
}

export const numberInUse = () =>
  new AppError(409, "number_in_use", "That phone number is already in use by another SIM card or a pool number; it cannot be claimed.");

/**
 * A member asks a card to take `number` (PATCH phone_number). Numbers change only by proof: this
 * only records the claim and issues a fresh code that proves that number alone; the card keeps
 * its number (null while pending) until an SMS from `number` carries the code
 * (verification.ts). Null when `number` already is the card's. Refuses what no proof could
 * ever give: the provider's own number (422), a number active on another card or held by the
 * pool (409 number_in_use). Call with the device and card locked.
 */
export async function claimNumber(tx: Tx, deps: Deps & { providerNumber: string }, card: SimCardRow, number: string): Promise<SimCardRow | null> {
  if (number === card.phone_number) return null;
  if (number === deps.providerNumber) {
    throw validationFailed({ phone_number: ["is the provider number that receives verification SMS; a SIM card cannot have it"] });
  }
  if ((await findActiveCardByNumber(tx, number)) || (await isPoolNumber(tx, number))) throw numberInUse();
  const now = new Date(deps.clock.now());
  await assertSlotFree(tx, card, now);
  return withNewCode(tx, now, (code, exp) => setSimCardClaim(tx, card.id, number, code, exp));
}
