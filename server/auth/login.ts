import type { Pool } from "../db/client";
import { AppError } from "../errors";
import type { Clock } from "../lib/clock";
import { randomString, sha256 } from "../lib/crypto";
import type { RateLimiter } from "../lib/rate-limit";
import type { UserRow } from "./caller";
import { addressKey, createFailureLimits, emailKey, rateLimited } from "./limits";
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
  const limits = createFailureLimits(deps.limiter);
  void getDummyHash();

  async function tokenFor(user: UserRow): Promise<TokenResult> {
    const session = await issueSession(sql, user.id, { ttlSeconds: deps.sessionTtlDays * 86_400 });
    return { token: session.token, token_type: "Bearer", expires_at: session.expiresAt.toISOString(), user: presentUser(user) };
  }

  async function login(email: string, password: string, address: string): Promise<TokenResult | ChallengeResult> {
    // Counted as a failure until the password is right (see reserve).
    const attempt = await limits.reserve([emailKey(email), addressKey(address)]);
    const user = await findUserByEmail(sql, email);
    const ok = await Bun.password.verify(password, user?.password_hash ?? (await getDummyHash()));
    if (!user || !ok) throw invalidCredentials();
    await attempt.release();
    // With 2FA on, only a correct code clears the failures: wrong codes must add up across tmp_tokens.
    if (!user.totp_enabled) {
      await limits.clear(emailKey(email));
      return tokenFor(user);
    }
    const tmpToken = `tt_${randomString(40)}`;
    await insertChallenge(sql, user.id, sha256(tmpToken), CHALLENGE_TTL_SECONDS);
    return { "2fa_required": true, tmp_token: tmpToken };
  }

  /** Second step of a 2FA login. Every wrong code spends one of the tmp_token's attempts and counts as a failed sign-in. */
  async function verifyTwoFactor(tmpToken: string, code: string, address: string): Promise<TokenResult> {
    // Each reservation counts as a failure until the code is right (see reserve).
    const byAddress = await limits.reserve([addressKey(address)]);
    const challenge = await claimChallengeAttempt(sql, sha256(tmpToken), CHALLENGE_MAX_ATTEMPTS);
    if (!challenge) throw invalidTwoFactor();
    const user = await findTotpUser(sql, challenge.user_id);
    const byEmail = user ? await limits.tryReserve([emailKey(user.email)]) : undefined;
    if (!user || byEmail?.retryIn) {
      await byAddress.release();
      if (byEmail?.retryIn) throw rateLimited(byEmail.retryIn);
      throw invalidTwoFactor();
    }
    const step =
      user.totp_enabled && user.totp_secret
        ? await checkTotp({ secret: user.totp_secret, code, nowMs: deps.clock.now(), afterStep: user.totp_last_step })
        : null;
    if (step === null || !(await acceptTotpStep(sql, user.id, step))) throw invalidTwoFactor();
    await byAddress.release();
    if (!(await completeChallenge(sql, challenge.id))) {
      await byEmail?.release();
      throw invalidTwoFactor();
    }
    await limits.clear(emailKey(user.email));
    return tokenFor(user);
  }

  return { login, verifyTwoFactor };
}
