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
