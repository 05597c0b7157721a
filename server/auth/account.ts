import type { Pool } from "../db/client";
import { notFound, validationFailed } from "../errors";
import type { RateLimiter } from "../lib/rate-limit";
import type { Credentials } from "./credentials";
import { createFailureLimits, passwordUserKey } from "./limits";
import { findPasswordHash, listUserSessions, setPasswordHash } from "./store";

/** At most this many tokens are listed (most recently used first); older ones still count and are signed out with the others. */
export const SESSION_LIST_MAX = 100;
export const PASSWORD_MIN_LENGTH = 8;

/** A signed-in user's own account: password change and their session and OAuth tokens (docs/api-notes.md "Account"). */
export function createAccount(deps: { sql: Pool; limiter: RateLimiter; credentials: Pick<Credentials, "endUserSessions"> }) {
  const limits = createFailureLimits(deps.limiter);

  /**
   * Checks the current password (wrong ones count like failed sign-ins, per user), stores the new
   * hash and ends every other token of the user in the same transaction; the calling token stays.
   */
  async function changePassword(userId: number, currentSessionId: number, current: string, next: string) {
    const attempt = await limits.reserve([passwordUserKey(userId)]);
    const hash = await findPasswordHash(deps.sql, userId);
    if (!hash) throw notFound("User");
    if (!(await Bun.password.verify(current, hash))) throw validationFailed({ current_password: ["is incorrect"] }, "The current password is incorrect.");
    await attempt.release();
    const nextHash = await Bun.password.hash(next, { algorithm: "argon2id" });
    const ended = await deps.credentials.endUserSessions(userId, { except: currentSessionId }, (tx) => setPasswordHash(tx, userId, nextHash));
    return { signed_out: ended.length };
  }

  async function listSessions(userId: number, currentSessionId: number) {
    const rows = await listUserSessions(deps.sql, userId, SESSION_LIST_MAX);
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      created_at: r.created_at.toISOString(),
      last_used_at: r.last_used_at?.toISOString() ?? null,
      expires_at: r.expires_at.toISOString(),
      current: r.id === currentSessionId,
    }));
  }

  async function signOut(userId: number, sessionId: number) {
    const ended = await deps.credentials.endUserSessions(userId, { only: sessionId });
    if (ended.length === 0) throw notFound("Session");
  }

  async function signOutOthers(userId: number, currentSessionId: number) {
    const ended = await deps.credentials.endUserSessions(userId, { except: currentSessionId });
    return { signed_out: ended.length };
  }

  return { changePassword, listSessions, signOut, signOutOthers };
}
