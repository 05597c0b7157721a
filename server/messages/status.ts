/** Outbound status moves (API.md §3 Messages): queued → sending → sent → delivered, or failed from any unfinished state. */
const NEXT: Record<string, string[]> = {
  queued: ["sending", "sent", "delivered", "failed"],
  sending: ["sent", "delivered", "failed"],
  sent: ["delivered", "failed"],
  delivered: [],
  failed: [],
};

/** The states a message may be in to move to `to`. */
export const statesBefore = (to: string) => Object.keys(NEXT).filter((s) => NEXT[s]!.includes(to));

export const canMove = (from: string, to: string) => NEXT[from]?.includes(to) ?? false;
