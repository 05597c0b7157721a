import { randomString } from "../lib/crypto";

/** API.md: `SIM-` and four characters of an alphabet without look-alikes (no I, L, O, 0, 1). */
export const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
export const CODE_LIFETIME_MS = 5 * 60 * 1000;
export const CODE_PATTERN = /SIM-[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{4}/;

export const newVerificationCode = () => `SIM-${randomString(4, CODE_ALPHABET)}`;

/** The code carried by an SMS body, tolerant of case and surrounding text. */
export function findVerificationCode(body: string): string | null {
  return body.toUpperCase().match(CODE_PATTERN)?.[0] ?? null;
}
