import type { Pool } from "../db/client";
import { invalidState, notFound } from "../errors";
import type { Clock } from "../lib/clock";
import type { RateLimiter } from "../lib/rate-limit";
import type { UserRow } from "./caller";
import type { Credentials } from "./credentials";
import { createFailureLimits, totpUserKey } from "./limits";
import { invalidTwoFactor } from "./login";
import { acceptTotpStep, findTotpUser, saveTotpSecret, setTotpEnabled, type TotpUserRow } from "./store";
import { checkTotp, newTotpSecret } from "./totp";

/** Setting up, enabling and disabling TOTP for a signed-in user (API.md §2). */
export function createTwoFactor(deps: { sql: Pool; limiter: RateLimiter; clock: Clock; credentials: Pick<Credentials, "change"> }) {
  const { sql } = deps;
  const limits = createFailureLimits(deps.limiter);

  async function load(userId: number): Promise<TotpUserRow> {
    const user = await findTotpUser(sql, userId);
    if (!user) throw notFound("User");
    return user;
  }

  /** Wrong codes from a session are limited per user like sign-ins, so a stolen session cannot guess its way to disabling 2FA. */
  async function requireCode(user: TotpUserRow, code: string) {
    // Counted as a failure until the code is right (see reserve).
    const attempt = await limits.reserve([totpUserKey(user.id)]);
    const step = user.totp_secret ? await checkTotp({ secret: user.totp_secret, code, nowMs: deps.clock.now(), afterStep: user.totp_last_step }) : null;
    if (step === null || !(await acceptTotpStep(sql, user.id, step))) throw invalidTwoFactor();
    await attempt.release();
  }

  // A new secret replaces an unconfirmed one; once 2FA is on, it must be disabled (with a code) first.
  async function setup(userId: number) {
    const user = await load(userId);
    if (user.totp_enabled) throw invalidState("Two-factor authentication is already enabled; disable it before setting it up again.");
    const { secret, otpauthUrl } = newTotpSecret();
    await saveTotpSecret(sql, user.id, secret);
    return { secret, otpauth_url: otpauthUrl(user.email) };
  }

  /** Turns 2FA on or off; cached callers of the user are refreshed on every instance before this returns (GET /api/me shows it at once). */
  const setEnabled = (userId: number, change: Parameters<typeof setTotpEnabled>[2]) =>
    deps.credentials.change(async (tx, record) => {
      const row = await setTotpEnabled(tx, userId, change);
      if (row) record.refresh({ userId });
      return row;
    });

  async function enable(userId: number, code: string): Promise<UserRow> {
    const user = await load(userId);
    if (user.totp_enabled) throw invalidState("Two-factor authentication is already enabled.");
    if (!user.totp_secret) throw invalidState("Call POST /api/auth/2fa/setup first to get a secret.");
    await requireCode(user, code);
    const row = await setEnabled(user.id, { enabled: true, secret: user.totp_secret });
    if (!row) throw invalidState("A new setup replaced the secret this code was for; enable with a code from the new secret.");
    return row;
  }

  async function disable(userId: number, code: string): Promise<UserRow> {
    const user = await load(userId);
    if (!user.totp_enabled) throw invalidState("Two-factor authentication is not enabled.");
    await requireCode(user, code);
    return (await setEnabled(user.id, { enabled: false }))!;
  }

  return { setup, enable, disable };
}
