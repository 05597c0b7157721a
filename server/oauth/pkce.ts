import { createHash } from "node:crypto";
import { constantTimeEqual } from "../lib/crypto";

// RFC 7636 4.1: 43..128 unreserved characters. An S256 challenge is always 43 base64url characters.
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export const isValidVerifier = (verifier: string) => VERIFIER.test(verifier);
export const isValidS256Challenge = (challenge: string) => S256_CHALLENGE.test(challenge);

export const s256 = (verifier: string) => createHash("sha256").update(verifier, "ascii").digest("base64url");

/** RFC 7636 4.6 with S256, the only method we accept (plain would let a stolen code be redeemed). */
export function verifyS256(verifier: string, challenge: string): boolean {
  return isValidVerifier(verifier) && constantTimeEqual(s256(verifier), challenge);
}
