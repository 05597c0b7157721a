import type { Revocation } from "../auth/caller-cache";
import type { Grant } from "./grants";

/** A revocation as the authenticator announces it (server/auth: `onRevoked`, the type's owner), on every instance. */
export type { Revocation };

/** Whether the revocation takes away the credential a subscription was granted on. */
export function revokes(r: Revocation, g: Grant): boolean {
  const c = g.credential;
  if (r.everything) return true;
  if (r.sessionId !== undefined && c.sessionId === r.sessionId) return true;
  // An extension's socket outlives the access token it subscribed with (it refreshes; the old
  // token expires and retention removes its row): its grant is what a sign-out ends.
  if (r.grantId !== undefined && c.grantId === r.grantId) return true;
  if (r.apiKeyId !== undefined && c.apiKeyId === r.apiKeyId) return true;
  if (r.userId !== undefined) return c.userId === r.userId && (r.organizationId === undefined || g.organizationId === r.organizationId);
  if (r.sessionId !== undefined || r.grantId !== undefined || r.apiKeyId !== undefined) return false;
  // An organization alone: every subscription granted for it.
  return r.organizationId !== undefined && g.organizationId === r.organizationId;
}

/**
 * The last revocations seen, numbered, so a subscription whose credential check was in flight
 * when one arrived can tell: nothing happened meanwhile, its credential was revoked, or it must
 * check again (`everything`, or more revocations than the log keeps).
 */
export function createRevocationLog(max = 1000) {
  let seq = 0;
  const entries: { seq: number; r: Revocation }[] = [];
  return {
    mark: () => seq,
    record(r: Revocation) {
      entries.push({ seq: ++seq, r });
      if (entries.length > max) entries.shift();
    },
    since(mark: number, g: Grant): "none" | "revoked" | "recheck" {
      if (mark === seq) return "none";
      if (entries.length === 0 || entries[0]!.seq > mark + 1) return "recheck";
      let verdict: "none" | "revoked" | "recheck" = "none";
      for (const { seq: s, r } of entries) {
        if (s <= mark) continue;
        if (r.everything) verdict = "recheck";
        else if (revokes(r, g)) return "revoked";
      }
      return verdict;
    },
  };
}
