import { createHmac } from "node:crypto";
import type { Sql } from "../../server/db/client";
import { randomString } from "../../server/lib/crypto";

/** Helpers of the OAuth tests (not a test file): clients, 2FA users, RFC 6238 codes, page scraping. */

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32Decode(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of text.replace(/=+$/, "").toUpperCase()) {
    value = (value << 5) | BASE32.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 6238 TOTP (HMAC-SHA1, 30 s steps, 6 digits), computed independently of the server's library. */
export function totpCode(secretBase32: string, nowMs = Date.now()): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(nowMs / 1000 / 30)));
  const mac = createHmac("sha1", base32Decode(secretBase32)).update(counter).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 1_000_000).padStart(6, "0");
}

export const TEST_TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";

export async function enableTotp(sql: Sql, userId: number, secret = TEST_TOTP_SECRET) {
  await sql`update users set totp_secret = ${secret}, totp_enabled = true where id = ${userId}`;
}

export async function createOAuthClient(sql: Sql, redirectUris = ["http://127.0.0.1:7777/callback"], name = "simhost browser extension") {
  const clientId = `oc_${randomString(24)}`;
  await sql`insert into oauth_clients (client_id, name, redirect_uris) values (${clientId}, ${name}, ${redirectUris})`;
  return { clientId, redirectUri: redirectUris[0]!, name };
}

/** The hidden inputs of the page's form, by name. */
export function hiddenInputs(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = m[2]!.replaceAll("&amp;", "&");
  return out;
}

export function cookieFrom(headers: Headers): string {
  const set = headers.get("set-cookie") ?? "";
  return set.split(";")[0]!;
}
