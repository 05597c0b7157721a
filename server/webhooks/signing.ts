import { createHmac, createSecretKey, type KeyObject } from "node:crypto";

/** Header names the signature scheme owns; integration headers can never replace them. */
export const SIGNATURE_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/** The HMAC key of a `whsec_` secret: the base64 after the prefix (Standard Webhooks). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
}

/** The HMAC key of a secret as a key object, imported once and reused for many signatures. */
export function signingKey(secret: string): KeyObject {
  return createSecretKey(secretKey(secret));
}

/**
 * Standard Webhooks signature headers for one attempt: `v1,` + base64 HMAC-SHA256 of
 * `id.timestamp.body`, the timestamp in whole seconds since the epoch.
 */
export function signatureHeaders(secret: string | KeyObject, id: string, body: string, nowMs: number): Record<(typeof SIGNATURE_HEADERS)[number], string> {
  const timestamp = String(Math.floor(nowMs / 1000));
  // Fed in parts: the signed content is never built as one string (the body is most of it).
  const signature = createHmac("sha256", typeof secret === "string" ? secretKey(secret) : secret)
    .update(id)
    .update(".")
    .update(timestamp)
    .update(".")
    .update(body)
    .digest("base64");
  return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": `v1,${signature}` };
}
