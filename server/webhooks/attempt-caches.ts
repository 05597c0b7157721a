import type { Clock } from "../lib/clock";
import { type SigningKey, signingKey } from "./signing";
import { type Lookup, resolveTarget, type TargetCheck } from "./ssrf";

/**
 * Per-delivery work that gives the same answer for every delivery to one integration within a
 * few seconds, kept that long so a busy endpoint's deliveries do not each repeat it:
 *
 * the HMAC key of an integration's secret (AES-GCM open and base64 decode), keyed by
 * the sealed value, so a new secret is a new entry. Only the key bytes are kept, for a few seconds
 * (about the life of a consumer batch), never the `whsec_` text.
 *
 * The SSRF guard's answer is never kept: every attempt resolves the name and classifies its
 * addresses again, since a pass kept for seconds would let a name that rebinds to a private
 * address (DNS rebinding) be reached without a check for that long.
 */
export const ATTEMPT_CACHE_TTL = { keyMs: 5_000, maxEntries: 1_000 };

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
  const keys = ttlMap<SigningKey>(deps.clock, ATTEMPT_CACHE_TTL.keyMs);
  return {
    /** The HMAC key of a sealed secret; throws as SecretBox.open does when it cannot be opened. */
    async key(sealed: string): Promise<SigningKey> {
      const hit = keys.get(sealed);
      if (hit) return hit;
      const key = signingKey(await deps.open(sealed));
      keys.set(sealed, key);
      return key;
    },
    /** The SSRF guard on the address the URL resolves to now, and that address to connect to (never cached, see above). */
    resolveTarget(url: string): Promise<TargetCheck> {
      return resolveTarget(new URL(url), { allowPrivate: deps.allowPrivate, lookup: deps.lookup });
    },
  };
}
