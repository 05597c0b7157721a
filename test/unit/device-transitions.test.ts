import { describe, expect, test } from "bun:test";
import { findVerificationCode, newVerificationCode } from "../../server/devices/codes";
import { type DeviceStatus, nextDeviceStatus, requireDeviceMove } from "../../server/devices/transitions";
import { AppError } from "../../server/errors";

describe("device state machine (SPEC.md 3.1 and API.md revoke)", () => {
  const table: [DeviceStatus, "verify" | "disable" | "enable" | "revoke", DeviceStatus | null][] = [
    ["pending_verification", "verify", "active"],
    ["active", "disable", "disabled"],
    ["disabled", "enable", "active"],
    ["active", "revoke", "revoked"],
    ["disabled", "revoke", "revoked"],
    ["pending_verification", "revoke", "revoked"],
    ["pending_verification", "disable", null],
    ["active", "enable", null],
    ["disabled", "disable", null],
    ["revoked", "enable", null],
    ["revoked", "disable", null],
    ["revoked", "revoke", null],
    ["revoked", "verify", null],
  ];
  for (const [from, op, to] of table) {
    test(`${from} --${op}--> ${to ?? "refused"}`, () => {
      expect(nextDeviceStatus(from, op)).toBe(to);
      if (to === null) expect(() => requireDeviceMove(from, op)).toThrow(AppError);
    });
  }
});

describe("verification codes", () => {
  test("SIM- and four characters of the API.md alphabet", () => {
    for (let i = 0; i < 1000; i++) expect(newVerificationCode()).toMatch(/^SIM-[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{4}$/);
  });
  test("found in an SMS body, case-insensitively; look-alike characters are not codes", () => {
    expect(findVerificationCode("Code: sim-ab23 thanks")).toBe("SIM-AB23");
    expect(findVerificationCode("SIM-AB10")).toBeNull();
    expect(findVerificationCode("no code")).toBeNull();
  });
});
