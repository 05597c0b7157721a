/**
 * Outbound status moves (API.md §3 Messages, docs/api-notes.md "Scheduled, expiring and bulk
 * sends"): scheduled → queued → sending → sent → delivered, or failed from any unfinished state.
 * A send not yet handed to a phone or the provider (scheduled, queued) may end `cancelled` (by
 * its organization) or `expired` (its expires_at passed); a provider send between attempts is
 * `sending` and may still expire. delivered, failed, cancelled and expired are final.
 */
const NEXT: Record<string, string[]> = {
  scheduled: ["queued", "cancelled", "expired"],
  queued: ["sending", "sent", "delivered", "failed", "cancelled", "expired"],
  sending: ["sent", "delivered", "failed", "expired"],
  sent: ["delivered", "failed"],
  delivered: [],
  failed: [],
  cancelled: [],
  expired: [],
};

/** The states from which a send can still be cancelled: nothing has been handed to a phone or the provider. */
export const CANCELLABLE = ["scheduled", "queued"];

/** The states a message may be in to move to `to`. */
export const statesBefore = (to: string) => Object.keys(NEXT).filter((s) => NEXT[s]!.includes(to));

export const canMove = (from: string, to: string) => NEXT[from]?.includes(to) ?? false;

/** The way a send goes when all is well; a report of a step already passed is news that arrived late. */
const PROGRESS = ["scheduled", "queued", "sending", "sent", "delivered"];

/**
 * How a delivery report (a device's, or the provider's status callback) meets the message's
 * current status: `move` it on, `stale` (the same status again, or a step the message has
 * already passed: a duplicate or out-of-order report, applied as nothing) or `conflict` (it
 * contradicts a final state, e.g. `sent` for a message that already failed or expired).
 * A status never moves backwards.
 */
export function judgeReport(current: string, reported: string): "move" | "stale" | "conflict" {
  if (current === reported) return "stale";
  if (canMove(current, reported)) return "move";
  const at = PROGRESS.indexOf(current);
  const was = PROGRESS.indexOf(reported);
  return at !== -1 && was !== -1 && was < at ? "stale" : "conflict";
}
