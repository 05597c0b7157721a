import type { Pool } from "../db/client";
import { AppError } from "../errors";
import type { Clock } from "../lib/clock";
import { randomString, sha256 } from "../lib/crypto";
import type { RateLimiter } from "../lib/rate-limit";
import type { UserRow } from "./caller";
import { rateLimited, totpUserKey } from "./limits";
import { createLoginLimits } from "./login-limits";
import { presentUser } from "./present";
import { acceptTotpStep, claimChallengeAttempt, completeChallenge, findTotpUser, findUserByEmail, insertChallenge } from "./store";
import { issueSession } from "./tokens";
import { checkTotp } from "./totp";

export const CHALLENGE_TTL_SECONDS = 5 * 60;
export const CHALLENGE_MAX_ATTEMPTS = 5;

export const invalidCredentials = () => new AppError(401, "invalid_credentials", "The email or password is incorrect.");
export const invalidTwoFactor = () => new AppError(401, "invalid_2fa_code", "The two-factor code is wrong, or the tmp_token is unknown, used or expired.");

// Unknown emails are checked against this hash so they take as long as a wrong password.
let dummyHash: Promise<string> | undefined;
const getDummyHash = () => (dummyHash ??= Bun.password.hash(randomString(32), { algorithm: "argon2id" }));

export type LoginDeps = { sql: Pool; limiter: RateLimiter; clock: Clock; sessionTtlDays: number };

export type TokenResult = { token: string; token_type: "Bearer"; expires_at: string; user: ReturnType<typeof presentUser> };
export type ChallengeResult = { "2fa_required": true; tmp_token: string };

export function createLoginFlow(deps: LoginDeps) {
  const { sql } = deps;
  const limits = createLoginLimits(deps.limiter);
  void getDummyHash();

  /** A session of the user whose password or code was checked in `epoch`; refused as `refusal` once their credentials moved on. */
  async function tokenFor(user: UserRow, epoch: number, refusal: () => AppError): Promise<TokenResult> {
    const session = await issueSession(sql, user.id, { ttlSeconds: deps.sessionTtlDays * 86_400, epoch });
    if (!session) throw refusal();
    return { token: session.token, token_type: "Bearer", expires_at: session.expiresAt.toISOString(), user: presentUser(user) };
  }

  async function login(email: string, password: string, address: string): Promise<TokenResult | ChallengeResult> {
    // Counted as a failure until the password is right (login-limits.ts).
    const attempt = await limits.reserve(email, address);
    const user = await findUserByEmail(sql, email);
    const ok = await Bun.password.verify(password, user?.password_hash ?? (await getDummyHash()));
    if (!user || !ok) {
      await attempt.failed();
      throw invalidCredentials();
    }
    await attempt.release();
    // With 2FA on, only a correct code clears the failures: wrong codes must add up across tmp_tokens.
    if (!user.totp_enabled) {
      await limits.signedIn(email, address);
      return tokenFor(user, user.credentials_epoch, invalidCredentials);
    }
    const tmpToken = `tt_${randomString(40)}`;
    if (!(await insertChallenge(sql, user.id, sha256(tmpToken), CHALLENGE_TTL_SECONDS, user.credentials_epoch))) throw invalidCredentials();
    return { "2fa_required": true, tmp_token: tmpToken };
  }

  /**
   * Second step of a 2FA login. Every wrong code spends one of the tmp_token's attempts and counts
   * as a failed sign-in of the account, from this address, like a wrong password.
   */
  async function verifyTwoFactor(tmpToken: string, code: string, address: string): Promise<TokenResult> {
    // An unknown tmp_token is a failure of the address alone: whose it would be is not known.
    const byAddress = await limits.reserve(null, address);
    const challenge = await claimChallengeAttempt(sql, sha256(tmpToken), CHALLENGE_MAX_ATTEMPTS);
    if (!challenge) throw invalidTwoFactor();
    await byAddress.release();
    const user = await findTotpUser(sql, challenge.user_id);
    if (!user) throw invalidTwoFactor();
    // The sign-in page's code step counts on the same per-user cap (oauth/sign-in.ts).
    const attempt = await limits.tryReserve(user.email, address, [totpUserKey(user.id)]);
    if (attempt.retryIn) throw rateLimited(attempt.retryIn);
    const step =
      user.totp_enabled && user.totp_secret
        ? await checkTotp({ secret: user.totp_secret, code, nowMs: deps.clock.now(), afterStep: user.totp_last_step })
        : null;
    if (step === null || !(await acceptTotpStep(sql, user.id, step))) {
      await attempt.failed();
      throw invalidTwoFactor();
    }
    await attempt.release();
    if (!(await completeChallenge(sql, challenge.id))) throw invalidTwoFactor();
    await limits.signedIn(user.email, address);
    return tokenFor(user, challenge.credentials_epoch, invalidTwoFactor);
  }

  return { login, verifyTwoFactor };
}
