import type postgres from "postgres";
import { isUniqueViolation, type Pool } from "../db/client";
import { event } from "../events/catalog";
import type { EventTail } from "../events/tail";
import type { Clock } from "../lib/clock";
import { reconsiderSends } from "../messages/pacer";
import { linkProvenNumber, renumberProvenNumber } from "../numbers/byos-store";
import { deviceKey, senderKey, type VerificationThrottle } from "../numbers/verification-throttle";
import type { DeviceActors } from "./actor";
import { appendDeviceEvents } from "./announce";
import { isE164 } from "./schema";
import { enqueueDeviceSmsProcessing } from "./sms-store";
import { activateSimCard, findActiveCardByNumber, recordDeviceVerified } from "./store";
import { type DeviceStatus, nextDeviceStatus } from "./transitions";

type Tx = postgres.TransactionSql;
type Guard = (tx: Tx) => Promise<boolean>;

export type VerificationOutcome = "verified" | "unknown_code" | "expired" | "wrong_sender" | "not_a_number" | "number_in_use" | "throttled" | "duplicate";

/** A code that was not the right one from its sender: these count against the throttle. */
const WRONG: ReadonlySet<VerificationOutcome> = new Set(["unknown_code", "expired", "wrong_sender"]);

type Deps = { sql: Pool; clock: Clock; actors: DeviceActors; events: Pick<EventTail, "notify">; throttle: VerificationThrottle; providerNumber: string };

type CodeCard = {
  id: number;
  device_id: number;
  organization_id: number;
  status: string;
  sim_slot: number | null;
  phone_number: string | null;
  claimed_number: string | null;
  hosted_sim_id: number | null;
  code_expires_at: Date | null;
};

/** The card a code belongs to; `lock`: its row, once its device's row is locked (`verifyInTx`). */
async function cardByCode(sql: Pool | Tx, code: string, lock: boolean) {
  const [row] = await sql<CodeCard[]>`
    select c.id, c.device_id, d.organization_id, c.status, c.sim_slot, c.phone_number, c.claimed_number, c.hosted_sim_id, c.code_expires_at
    from sim_cards c join devices d on d.id = c.device_id
    where c.verification_code = ${code} and d.status <> 'revoked' ${lock ? sql`for update of c` : sql``}`;
  return row ?? null;
}

/** Records the SMS (the caller's guard) without proving anything: `outcome`, or duplicate for a repeat. */
async function settle(deps: Deps, guard: Guard, outcome: VerificationOutcome): Promise<VerificationOutcome> {
  return (await deps.sql.begin((tx) => guard(tx))) ? outcome : "duplicate";
}

/**
 * The proof itself: numbers/ gives a pending card its hosted SIM, or renumbers a verified card's.
 * A verified card's sends still waiting were accepted from its old number, which the SIM no longer
 * is: its pacer ends them (messages/pacer.ts), so the phone never sends them from the new one.
 */
async function proveNumber(tx: Tx, card: CodeCard, from: string, providerNumber: string) {
  const holder = await findActiveCardByNumber(tx, from);
  if (from === providerNumber || (holder && holder.id !== card.id)) return null;
  if (card.status !== "active") return linkProvenNumber(tx, from, card.organization_id);
  const hostedSimId = await renumberProvenNumber(tx, card.hosted_sim_id, from, card.organization_id);
  if (hostedSimId !== null && card.hosted_sim_id !== null) await reconsiderSends(tx, [card.hosted_sim_id]);
  return hostedSimId;
}

async function verifyInTx(tx: Tx, deviceId: number, code: string, from: string, now: Date, providerNumber: string) {
  // The device's row before its card's, in the order every device operation takes them
  // (management.ts `onDevice`): the other order deadlocked with a revocation, a deactivation or
  // a reissue on another instance (the provider's callback answered 500).
  const [device] = await tx<{ status: DeviceStatus }[]>`select status from devices where id = ${deviceId} for update`;
  const card = await cardByCode(tx, code, true);
  // A verified card answers only the code of its pending claim; a code that moved to another device meanwhile is not this device's.
  if (!device || !card || card.device_id !== deviceId || (card.status === "active" && card.claimed_number === null))
    return { outcome: "unknown_code" as const };
  if (!card.code_expires_at || card.code_expires_at <= now) return { outcome: "expired" as const };
  if (card.claimed_number !== null && card.claimed_number !== from) return { outcome: "wrong_sender" as const };
  // An alphanumeric sender id or a short code is no SIM's number: it proves nothing.
  if (!isE164(from)) return { outcome: "not_a_number" as const };
  const hostedSimId = await proveNumber(tx, card, from, providerNumber);
  if (hostedSimId === null) return { outcome: "number_in_use" as const };
  await activateSimCard(tx, card.id, from, hostedSimId);
  // The status as locked above: nothing since has changed it.
  const status = nextDeviceStatus(device.status, "verify") ?? device.status;
  await recordDeviceVerified(tx, card.device_id, status);
  await enqueueDeviceSmsProcessing(tx, card.device_id);
  const verified = event.simVerified(
    { organizationId: card.organization_id, deviceId: card.device_id, hostedSimId },
    {
      device_id: card.device_id,
      sim_card: { id: card.id, sim_slot: card.sim_slot, phone_number: from, status: "active", hosted_sim_id: hostedSimId },
      hosted_sim_id: hostedSimId,
      device_status: status,
    },
  );
  await appendDeviceEvents(tx, card.organization_id, card.device_id, now.getTime(), { before: [verified], config: true });
  return { outcome: "verified" as const, status };
}

/** Serialised on the device's actor; everything, with the caller's guard, commits together. */
async function verifyOnDevice(deps: Deps, deviceId: number, code: string, from: string, guard: Guard): Promise<VerificationOutcome> {
  const state = await deps.actors.get(deviceId);
  if (!state) return settle(deps, guard, "unknown_code");
  return deps.actors.run(state, async () => {
    const result = await deps.sql
      .begin(async (tx) => {
        if (!(await guard(tx))) return { outcome: "duplicate" as const };
        return verifyInTx(tx, deviceId, code, from, new Date(deps.clock.now()), deps.providerNumber);
      })
      .catch((e) => {
        // Another card took the same number at the same moment (the active-number index, or a hosted SIM's unique number).
        if (isUniqueViolation(e)) return { outcome: "number_in_use" as const };
        throw e;
      });
    if (result.outcome !== "verified") return result.outcome;
    state.status = result.status;
    deps.events.notify();
    return "verified";
  });
}

/**
 * Counts the code against its sender and against the device it can be attributed to (the card
 * the code belongs to, else the device whose active card has the sender's number; a code that
 * matches nothing and comes from an unknown number counts against the sender alone) before it is
 * judged; a code that was not wrong gives those counts back. Over the limit, the code is ignored.
 */
async function throttledAttempt(deps: Deps, code: string, from: string, guard: Guard): Promise<VerificationOutcome> {
  const sender = await deps.throttle.reserve(senderKey(from));
  if (!sender.allowed) return settle(deps, guard, "throttled");
  let device: Awaited<ReturnType<VerificationThrottle["reserve"]>> | null = null;
  let outcome: VerificationOutcome;
  try {
    const found = await cardByCode(deps.sql, code, false);
    const deviceId = found?.device_id ?? (await findActiveCardByNumber(deps.sql, from))?.device_id;
    device = deviceId === undefined ? null : await deps.throttle.reserve(deviceKey(deviceId));
    if (device && !device.allowed) outcome = await settle(deps, guard, "throttled");
    else if (found) outcome = await verifyOnDevice(deps, found.device_id, code, from, guard);
    else outcome = await settle(deps, guard, "unknown_code");
  } catch (e) {
    // Nothing was judged (the provider retries it): the counts it reserved go back.
    await Promise.all([sender.release(), device?.release()]).catch(() => {});
    throw e;
  }
  if (!WRONG.has(outcome) && outcome !== "throttled") await Promise.all([sender.release(), device?.release()]);
  return outcome;
}

/**
 * API.md verification: an SMS from `from` carrying a live code proves that number is the code's
 * SIM card's (for a claim, only an SMS from the claimed number does). Wrong codes are throttled
 * per sender and per device (server/numbers/verification-throttle.ts).
 */
export async function verifySimCard(deps: Deps, code: string, from: string, guard: Guard): Promise<VerificationOutcome> {
  const outcome = await throttledAttempt(deps, code, from, guard);
  deps.throttle.record(outcome);
  return outcome;
}
