import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniform random string over `alphabet` (rejection sampling: no modulo bias). */
export function randomString(length: number, alphabet = BASE62): string {
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < limit) out += alphabet[b % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Tokens are stored only as this digest; lookups go by digest, so the secret never sits in the database. */
export const sha256 = (value: string): Buffer => {
  const digest = Buffer.allocUnsafe(32);
  Bun.SHA256.hash(value, digest);
  return digest;
};

/**
 * The same digest as base64 text, in one call: what every authenticated request computes for its
 * token (the caller cache's key), about a third of hashing into a Buffer and encoding that.
 */
export const sha256Base64 = (value: string): string => Bun.SHA256.hash(value, "base64") as string;

export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const x = typeof a === "string" ? Buffer.from(a) : a;
  const y = typeof b === "string" ? Buffer.from(b) : b;
  // Compare digests so unequal lengths take the same time as equal ones.
  return timingSafeEqual(createHash("sha256").update(x).digest(), createHash("sha256").update(y).digest()) && x.length === y.length;
}
