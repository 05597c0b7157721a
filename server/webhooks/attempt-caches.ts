import type { KeyObject } from "node:crypto";
import type { Clock } from "../lib/clock";
import { signingKey } from "./signing";
import { checkTarget, type Lookup } from "./ssrf";

/**
 * Per-delivery work that gives the same answer for every delivery to one integration within a
 * few seconds, kept that long so a busy endpoint's deliveries do not each repeat it:
 *
 * - the HMAC key of an integration's secret (AES-GCM open, base64 decode and key import), keyed by
 *   the sealed value, so a new secret is a new entry. Only the key object is kept, for a few
 *   seconds (about the life of a consumer batch), never the `whsec_` text;
 * - a target URL that the SSRF guard passed. Only passes are kept, for a few seconds; a
 *   connection that failed drops the entry (forgetTarget), so the next attempt checks again.
 *   The guard already checked the name before the connection resolved it again, so keeping a
 *   pass for seconds does not widen that window in kind.
 */
export const ATTEMPT_CACHE_TTL = { keyMs: 5_000, targetMs: 5_000, maxEntries: 1_000 };

type Entry<T> = { value: T; until: number };

function ttlMap<T>(clock: Clock, ttlMs: number) {
  const map = new Map<string, Entry<T>>();
  return {
    get(k: string): T | undefined {
      const e = map.get(k);
      if (!e) return undefined;
      if (e.until > clock.now()) return e.value;
      map.delete(k);
      return undefined;
    },
    set(k: string, value: T) {
      if (map.size >= ATTEMPT_CACHE_TTL.maxEntries) map.clear();
      map.set(k, { value, until: clock.now() + ttlMs });
    },
    delete: (k: string) => map.delete(k),
  };
}

export type AttemptCaches = ReturnType<typeof createAttemptCaches>;

export function createAttemptCaches(deps: { clock: Clock; allowPrivate: boolean; lookup?: Lookup; open: (sealed: string) => Promise<string> }) {
  const keys = ttlMap<KeyObject>(deps.clock, ATTEMPT_CACHE_TTL.keyMs);
  const passed = ttlMap<true>(deps.clock, ATTEMPT_CACHE_TTL.targetMs);
  return {
    /** The HMAC key of a sealed secret; throws as SecretBox.open does when it cannot be opened. */
    async key(sealed: string): Promise<KeyObject> {
      const hit = keys.get(sealed);
      if (hit) return hit;
      const key = signingKey(await deps.open(sealed));
      keys.set(sealed, key);
      return key;
    },
    /** checkTarget, or a recent pass of the same URL. */
    async checkTarget(url: string): Promise<string | null> {
      if (deps.allowPrivate) return null;
      if (passed.get(url)) return null;
      const refused = await checkTarget(new URL(url), { allowPrivate: false, lookup: deps.lookup });
      if (!refused) passed.set(url, true);
      return refused;
    },
    /** After a connection failure: the next attempt to this URL checks its addresses again. */
    forgetTarget(url: string) {
      passed.delete(url);
    },
  };
}
