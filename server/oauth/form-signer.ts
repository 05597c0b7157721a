import { createHmac } from "node:crypto";
import type { Clock } from "../lib/clock";
import { constantTimeEqual } from "../lib/crypto";

/**
 * HMAC-signed, expiring tokens carried in the sign-in forms, so the page keeps no server-side
 * state between steps: the validated authorization request, "password checked for user N",
 * and the CSRF value bound to the browser's cookie.
 */
export type FormSigner = ReturnType<typeof createFormSigner>;

export function createFormSigner(key: string, clock: Clock) {
  const mac = (data: string) => createHmac("sha256", key).update(data).digest("base64url");

  function sign(purpose: string, payload: object, ttlSeconds: number): string {
    const body = Buffer.from(JSON.stringify({ ...payload, p: purpose, exp: clock.now() + ttlSeconds * 1000 })).toString("base64url");
    return `${body}.${mac(body)}`;
  }

  /** The payload when the token is intact, of this purpose and unexpired; otherwise null. */
  function verify<T>(purpose: string, token: string | undefined): T | null {
    const [body, signature, extra] = (token ?? "").split(".");
    if (!body || !signature || extra !== undefined || !constantTimeEqual(mac(body), signature)) return null;
    try {
      const payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
      if (payload.p !== purpose || typeof payload.exp !== "number" || payload.exp <= clock.now()) return null;
      return payload as T;
    } catch {
      return null;
    }
  }

  /** Double-submit CSRF value: only a page served to the browser holding `nonce` can know it. */
  const csrfFor = (nonce: string, request: string) => mac(`csrf:${nonce}:${request}`);
  const checkCsrf = (nonce: string | undefined, request: string, value: string | undefined) =>
    !!nonce && !!value && constantTimeEqual(csrfFor(nonce, request), value);

  return { sign, verify, csrfFor, checkCsrf };
}
