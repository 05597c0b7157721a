import { createHmac } from "node:crypto";
import ipaddr from "ipaddr.js";
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

/**
 * Whether a callback from `address` may be judged by its signature: always with a token of the
 * operator's own, and only from this machine (loopback, or a request handled in-process) while
 * the development token is in use, which anyone can read in the source: signed with it, a
 * callback from the network could store any SMS or prove any SIM. Behind a proxy on this
 * machine every caller reads as loopback; production sets PROVIDER_AUTH_TOKEN (logged at start).
 */
export function acceptsCallbackFrom(address: string, developmentToken: boolean): boolean {
  if (!developmentToken || address === "local") return true;
  const parsed = ipaddr.isValid(address) ? ipaddr.process(address) : null;
  return parsed?.range() === "loopback";
}
