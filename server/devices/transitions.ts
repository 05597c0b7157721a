import { AppError, invalidState } from "../errors";

export type DeviceStatus = "pending_verification" | "active" | "disabled" | "revoked";
export type SimCardStatus = "pending" | "active" | "inactive";
export type DeviceOperation = "verify" | "disable" | "enable" | "revoke";

/**
 * SPEC.md 3.1 plus API.md's decisions: revoke takes any live device to `revoked` for good;
 * a repeated verification leaves an active (or disabled) device where it is.
 */
const DEVICE_MOVES: Record<DeviceOperation, Partial<Record<DeviceStatus, DeviceStatus>>> = {
  verify: { pending_verification: "active", active: "active", disabled: "disabled" },
  disable: { active: "disabled" },
  enable: { disabled: "active" },
  revoke: { pending_verification: "revoked", active: "revoked", disabled: "revoked" },
};

/** The status a device moves to, or null when the state machine refuses the move. */
export function nextDeviceStatus(status: DeviceStatus, op: DeviceOperation): DeviceStatus | null {
  return DEVICE_MOVES[op][status] ?? null;
}

/** Like nextDeviceStatus, throwing the 409 a client sees for a refused move. */
export function requireDeviceMove(status: DeviceStatus, op: DeviceOperation): DeviceStatus {
  const next = nextDeviceStatus(status, op);
  if (!next) throw invalidState(`A device in status ${status} cannot be ${op === "verify" ? "verified" : `${op}d`}.`);
  return next;
}

/** Heartbeats are answered for every live device (a disabled one learns its state that way). */
export function assertAcceptsHeartbeat(status: DeviceStatus) {
  if (status === "revoked") throw invalidState("This device has been revoked; it can no longer send heartbeats.");
}

/**
 * The statuses whose devices may submit SMS: pending (their SMS wait for verification) and active.
 * The intake's statement decides with this list (sms-store.ts), and its refusals are answered here.
 */
export const SMS_ACCEPTING_STATUSES: readonly DeviceStatus[] = ["active", "pending_verification"];

export function assertAcceptsSms(status: DeviceStatus) {
  if (!SMS_ACCEPTING_STATUSES.includes(status)) throw invalidState(`This device is ${status}; it cannot submit SMS.`);
}

/**
 * The statuses whose devices owe an offline alert when they go quiet (a disabled device was
 * silenced on purpose). The claim's statement decides with this list (presence-store.ts), and the
 * actor asks it before claiming.
 */
export const OFFLINE_ALERT_STATUSES: readonly DeviceStatus[] = ["active", "pending_verification"];

/**
 * Reports on the sends a device was handed: from any device, and from a revoked one only on the
 * sends it had taken up (`sending`, `sent`): those went to the air through it, and only it can
 * say how they ended. Its sends not taken up were failed at the revocation (messages/pacer.ts).
 */
export function assertReportsSends(deviceStatus: DeviceStatus, messageStatus: string) {
  if (deviceStatus === "revoked" && messageStatus !== "sending" && messageStatus !== "sent")
    throw invalidState("This device has been revoked; it can report only on the messages it had taken up (sending or sent).");
}

/** Operators and users may change a device until it is revoked. */
export function assertEditable(status: DeviceStatus) {
  if (status === "revoked") throw invalidState("This device has been revoked; it can no longer be changed.");
}

/** SPEC.md 3.2: a new code for pending and inactive cards, never for an active one. */
export function assertCodeReissuable(status: SimCardStatus) {
  if (status === "active") throw new AppError(409, "sim_already_active", "This SIM card is already verified; a new code cannot be issued.");
}

export function invalidStateIf(condition: boolean, message: string) {
  if (condition) throw invalidState(message);
}
