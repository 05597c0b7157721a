import { createHmac } from "node:crypto";
import { constantTimeEqual } from "../lib/crypto";

export type FormParams = Record<string, string | string[]>;

/** Form data as posted, keeping repeated names (they are all signed). */
export function parseForm(raw: string): FormParams {
  const params: FormParams = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const seen = params[name];
    if (seen === undefined) params[name] = value;
    else params[name] = Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return params;
}

/**
 * API.md: base64(HMAC-SHA1(token, url + each field in name order as name + value)), the algorithm
 * of X-Twilio-Signature. Repeated names sign each distinct value in order, as the reference does.
 */
export function providerSignature(authToken: string, url: string, params: FormParams): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name]!;
    if (Array.isArray(value)) for (const v of [...new Set(value)].sort()) data += name + v;
    else data += name + value;
  }
  return createHmac("sha1", authToken).update(Buffer.from(data, "utf-8")).digest("base64");
}

export function isValidProviderSignature(authToken: string, url: string, params: FormParams, signature: string | null): boolean {
  if (!signature) return false;
  return constantTimeEqual(providerSignature(authToken, url, params), signature);
}
