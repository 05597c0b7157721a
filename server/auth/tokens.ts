import type { Sql } from "../db/client";
import { randomString, sha256 } from "../lib/crypto";

/** Session tokens: `st_` + 40 base62 characters; API keys: `sk_` + 40. Only SHA-256 digests are stored. */
export const newSessionToken = () => `st_${randomString(40)}`;
export const newApiKey = () => `sk_${randomString(40)}`;
export const API_KEY_PREFIX_LENGTH = 12;

export async function issueSession(sql: Sql, userId: number, opts: { kind?: "session" | "oauth"; ttlSeconds: number }) {
  const token = newSessionToken();
  const [row] = await sql<{ id: number; expires_at: Date }[]>`
    insert into sessions (user_id, token_hash, kind, expires_at)
    values (${userId}, ${sha256(token)}, ${opts.kind ?? "session"}, now() + make_interval(secs => ${opts.ttlSeconds}))
    returning id, expires_at`;
  return { token, id: row!.id, expiresAt: row!.expires_at };
}
