import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * X-Provider-Signature (API.md "Provider callback"): base64 HMAC-SHA1 keyed with the auth
 * token over the full URL followed by every form field sorted by name, name then value.
 * The same algorithm as X-Twilio-Signature, so the twilio package can check it.
 */
export function providerSignature(authToken: string, url: string, params: Record<string, string>): string {
  const data = Object.keys(params)
    .sort()
    .reduce((acc, name) => acc + name + params[name], url);
  return createHmac("sha1", authToken).update(Buffer.from(data, "utf8")).digest("base64");
}

export function verifyProviderSignature(authToken: string, url: string, params: Record<string, string>, signature: string | null): boolean {
  if (!signature) return false;
  const expected = Buffer.from(providerSignature(authToken, url, params));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
