import { generateSecret, generateURI, verify } from "otplib";

/** RFC 6238 with the authenticator-app defaults: SHA-1, 6 digits, 30-second steps. */
const ISSUER = "simhost";

// One step either side absorbs clock drift between phone and server.
const TOLERANCE_SECONDS = 30;

export function newTotpSecret(): { secret: string; otpauthUrl: (label: string) => string } {
  const secret = generateSecret({ length: 20 });
  return { secret, otpauthUrl: (label) => generateURI({ issuer: ISSUER, label, secret }) };
}

/**
 * The time step a correct code belongs to, or null. Steps at or before `afterStep` were already
 * used and are refused, so a code works once.
 */
export async function checkTotp(opts: { secret: string; code: string; nowMs: number; afterStep: number | null }): Promise<number | null> {
  try {
    const result = await verify({
      secret: opts.secret,
      token: opts.code,
      epoch: Math.floor(opts.nowMs / 1000),
      epochTolerance: TOLERANCE_SECONDS,
      ...(opts.afterStep !== null ? { afterTimeStep: opts.afterStep } : {}),
    });
    return result.valid && "timeStep" in result ? result.timeStep : null;
  } catch {
    // A malformed code or secret is just a wrong code to the caller.
    return null;
  }
}
