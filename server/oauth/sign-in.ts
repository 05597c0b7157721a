import { verify as verifyTotp } from "otplib";
import type { Sql } from "../db/client";
import type { Clock } from "../lib/clock";
import { randomString } from "../lib/crypto";
import type { RateLimiter } from "../lib/rate-limit";
import { findUserForConsent, findUserForSignIn } from "./store";

/** API.md §2: 10 failures in 15 minutes lock sign-in, per email and per client address. */
const MAX_FAILURES = 10;
/** Fewer tries for the 6-digit code: a password was already proven, the code space is small. */
const MAX_CODE_FAILURES = 5;
const WINDOW_SECONDS = 15 * 60;
// One 30-second step either side absorbs clock drift between phone and server.
const TOTP_TOLERANCE_SECONDS = 30;

export type SignInResult = { ok: true; userId: number; needsCode: boolean } | { ok: false; retryIn?: number };

// Unknown emails are checked against this hash so they take as long as a wrong password.
let dummyHash: Promise<string> | undefined;
const getDummyHash = () => (dummyHash ??= Bun.password.hash(randomString(32), { algorithm: "argon2id" }));

/** Password and TOTP checks of the sign-in page, with failure limits shared by every instance. */
export function createSignIn(deps: { sql: Sql; limiter: RateLimiter; clock: Clock }) {
  const { sql, limiter } = deps;

  async function lockedFor(keys: string[], max: number): Promise<number | undefined> {
    for (const key of keys) {
      const { count, resetIn } = await limiter.peek(key);
      if (count >= max) return Math.max(1, resetIn);
    }
    return undefined;
  }

  async function checkPassword(email: string, password: string, address: string): Promise<SignInResult> {
    const keys = [`oauth:signin:email:${email.trim().toLowerCase()}`, `oauth:signin:ip:${address}`];
    const retryIn = await lockedFor(keys, MAX_FAILURES);
    if (retryIn) return { ok: false, retryIn };
    const user = await findUserForSignIn(sql, email.trim());
    const ok = await Bun.password.verify(password, user?.password_hash ?? (await getDummyHash()));
    if (!user || !ok) {
      await Promise.all(keys.map((k) => limiter.hit(k, WINDOW_SECONDS)));
      return { ok: false };
    }
    await limiter.reset(keys[0]!);
    return { ok: true, userId: user.id, needsCode: user.totp_enabled && !!user.totp_secret };
  }

  async function checkCode(userId: number, code: string): Promise<SignInResult> {
    const key = `oauth:signin:totp:${userId}`;
    const retryIn = await lockedFor([key], MAX_CODE_FAILURES);
    if (retryIn) return { ok: false, retryIn };
    const user = await findUserForConsent(sql, userId);
    const token = code.replace(/\s+/g, "");
    const valid = !!user?.totp_secret && /^\d{6}$/.test(token) && (await totpMatches(user.totp_secret, token, deps.clock.now()));
    if (!valid) {
      await limiter.hit(key, WINDOW_SECONDS);
      return { ok: false };
    }
    await limiter.reset(key);
    return { ok: true, userId, needsCode: false };
  }

  return { checkPassword, checkCode };
}

async function totpMatches(secret: string, token: string, nowMs: number): Promise<boolean> {
  try {
    const result = await verifyTotp({ secret, token, epoch: Math.floor(nowMs / 1000), epochTolerance: TOTP_TOLERANCE_SECONDS });
    return result.valid;
  } catch {
    return false; // a malformed secret is a failed check, never a 500
  }
}
