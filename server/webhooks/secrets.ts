import { randomBytes } from "node:crypto";

/** A Standard Webhooks signing secret: `whsec_` + base64 of 24 random bytes (192 bits). Stored sealed (server/lib/secret-box.ts). */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}
