import { totpUserKey } from "../auth/limits";
import { createLoginLimits } from "../auth/login-limits";
import { acceptTotpStep, findTotpUser, findUserByEmail } from "../auth/store";
import { checkTotp } from "../auth/totp";
import type { Sql } from "../db/client";
import type { Clock } from "../lib/clock";
import { randomString } from "../lib/crypto";
import type { RateLimiter } from "../lib/rate-limit";

/** `epoch`: the user's credentials epoch the password was checked in (auth/store.ts `inEpoch`). */
export type SignInResult = { ok: true; userId: number; epoch: number; needsCode: boolean } | { ok: false; retryIn?: number };
export type CodeResult = { ok: true } | { ok: false; retryIn?: number };

// Unknown emails are checked against this hash so they take as long as a wrong password.
let dummyHash: Promise<string> | undefined;
const getDummyHash = () => (dummyHash ??= Bun.password.hash(randomString(32), { algorithm: "argon2id" }));

/**
 * Password and TOTP checks of the sign-in page. They share the API login's throttles (per account,
 * per account and address, per address; per user for codes) and its TOTP replay guard, so the
 * page is no side door around either.
 */
export function createSignIn(deps: { sql: Sql; limiter: RateLimiter; clock: Clock }) {
  const { sql } = deps;
  // The API login's throttles (auth/login-limits.ts): each attempt is counted before it is judged.
  const limits = createLoginLimits(deps.limiter);

  async function checkPassword(email: string, password: string, address: string): Promise<SignInResult> {
    const attempt = await limits.tryReserve(email, address);
    if (attempt.retryIn) return { ok: false, retryIn: attempt.retryIn };
    const user = await findUserByEmail(sql, email.trim());
    const ok = await Bun.password.verify(password, user?.password_hash ?? (await getDummyHash()));
    if (!user || !ok) {
      await attempt.failed();
      return { ok: false };
    }
    await attempt.release();
    // With 2FA on, only a correct code clears the failures (checkCode), as the API login does:
    // wrong codes there must add up however often the password is given here.
    if (!user.totp_enabled) await limits.signedIn(email, address);
    return { ok: true, userId: user.id, epoch: user.credentials_epoch, needsCode: user.totp_enabled };
  }

  async function checkCode(userId: number, code: string, address: string): Promise<CodeResult> {
    const user = await findTotpUser(sql, userId);
    if (!user) return { ok: false };
    const attempt = await limits.tryReserve(user.email, address, [totpUserKey(userId)]);
    if (attempt.retryIn) return { ok: false, retryIn: attempt.retryIn };
    const token = code.replace(/\s+/g, "");
    const step =
      user.totp_enabled && user.totp_secret
        ? await checkTotp({ secret: user.totp_secret, code: token, nowMs: deps.clock.now(), afterStep: user.totp_last_step })
        : null;
    // A code is good once (RFC 6238 5.2), on this page or the API alike.
    if (step === null || !(await acceptTotpStep(sql, userId, step))) {
      await attempt.failed();
      return { ok: false };
    }
    await attempt.release();
    await limits.signedIn(user.email, address);
    return { ok: true };
  }

  return { checkPassword, checkCode };
}
