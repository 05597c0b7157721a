/**
 * An event's place in the log: the writing transaction's id, then the row id (docs/events.md
 * "Cursors"). Clients see it as an opaque string, which is also the event's id (`event_id` in
 * realtime payloads, `webhook-id` of deliveries); only its order means anything.
 */
export type Position = { txid: string; id: number };

const PREFIX = "evt_";
const DIGITS = /^\d{1,19}$/;

export function encodeCursor(p: Position): string {
  return `${PREFIX}${Buffer.from(`${p.txid}.${p.id}`).toString("base64url")}`;
}

/** The position a cursor names, or null when it is not one of ours (the caller answers 422). */
export function decodeCursor(cursor: string): Position | null {
  if (!cursor.startsWith(PREFIX) || cursor.length > 64) return null;
  const raw = Buffer.from(cursor.slice(PREFIX.length), "base64url").toString();
  const [txid, id, ...rest] = raw.split(".");
  if (rest.length > 0 || txid === undefined || id === undefined || !DIGITS.test(txid) || !DIGITS.test(id)) return null;
  const n = Number(id);
  if (!Number.isSafeInteger(n)) return null;
  return { txid: BigInt(txid).toString(), id: n };
}

/** The position before every event. */
export const ORIGIN: Position = { txid: "0", id: 0 };

export const isAfter = (a: Position, b: Position) => {
  const ta = BigInt(a.txid);
  const tb = BigInt(b.txid);
  return ta > tb || (ta === tb && a.id > b.id);
};
