import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Sql } from "../db/client";

/** Parses SECRETS_KEY: 64 hex characters or base64 of exactly 32 bytes. */
export function parseSecretsKey(value: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, "hex") : Buffer.from(value, "base64");
  if (key.length !== 32) throw new Error("SECRETS_KEY must be 32 bytes (64 hex characters or base64)");
  return key;
}

/** The `settings` row of a generated key (its name predates the idempotent answers also sealed with it). */
const SETTINGS_KEY = "webhook_secrets_key";
const VERSION = "v1";

/**
 * The key that seals what the server keeps but must not store in plain text: webhook signing
 * secrets, and the answers kept for Idempotency-Key replays (which may hold a secret shown once).
 * From SECRETS_KEY when set; otherwise generated once and kept in `settings` (the first instance
 * to start wins the insert, the others read it).
 * Trade-off (docs/api-notes.md): a key kept beside the ciphertext protects secrets in exports of
 * single tables and in logs, not against someone holding the whole database; set SECRETS_KEY to
 * keep the two apart.
 */
export async function loadSecretsKey(sql: Sql, configured: string | undefined): Promise<Buffer> {
  if (configured) return parseSecretsKey(configured);
  await sql`insert into settings (key, value) values (${SETTINGS_KEY}, ${randomBytes(32).toString("base64")}) on conflict (key) do nothing`;
  const [row] = await sql<{ value: string }[]>`select value from settings where key = ${SETTINGS_KEY}`;
  return parseSecretsKey(row!.value);
}

/** AES-256-GCM: `v1:` + base64(iv ‖ tag ‖ ciphertext). A fresh 96-bit IV per seal. */
export function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString("base64")}`;
}

/** Opens what `seal` made; throws when the key is wrong or the value was tampered with. */
export function open(key: Buffer, sealed: string): string {
  const [version, data] = sealed.split(":");
  if (version !== VERSION || !data) throw new Error("unknown sealed secret format");
  const raw = Buffer.from(data, "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}

export type SecretBox = { seal(secret: string): Promise<string>; open(sealed: string): Promise<string> };

/** Seals and opens with the key resolved once, on first use. */
export function createSecretBox(sql: Sql, configured: string | undefined): SecretBox {
  let key: Promise<Buffer> | undefined;
  const get = () => {
    key ??= loadSecretsKey(sql, configured).catch((e) => {
      key = undefined; // a database hiccup at first use must not poison every later call
      throw e;
    });
    return key;
  };
  return {
    seal: async (secret) => seal(await get(), secret),
    open: async (sealed) => open(await get(), sealed),
  };
}
