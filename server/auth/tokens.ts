import type { Sql } from "../db/client";
import { randomString, sha256 } from "../lib/crypto";
import { inEpoch } from "./store";

/** Session tokens: `st_` + 40 base62 characters; API keys: `sk_` + 40. Only SHA-256 digests are stored. */
export const newSessionToken = () => `st_${randomString(40)}`;
export const newApiKey = () => `sk_${randomString(40)}`;
/** Whether a Bearer token is an API key (by its prefix; whether it exists is another question). */
export const isApiKey = (token: string) => token.startsWith("sk_");
export const API_KEY_PREFIX_LENGTH = 12;

/**
 * A new session or OAuth access token of the user, issued only while `epoch` is their credentials
 * epoch (store.ts `inEpoch`): undefined once a password change or a sign-out everywhere else
 * moved it past the epoch the password, code or grant was proven in.
 */
export async function issueSession(sql: Sql, userId: number, opts: { kind?: "session" | "oauth"; ttlSeconds: number; epoch: number }) {
  const token = newSessionToken();
  const [row] = await sql<{ id: number; expires_at: Date }[]>`
    insert into sessions (user_id, token_hash, kind, expires_at)
    select u.id, ${sha256(token)}, ${opts.kind ?? "session"}, now() + make_interval(secs => ${opts.ttlSeconds})
    from (${inEpoch(sql, userId, opts.epoch)}) u
    returning id, expires_at`;
  return row && { token, id: row.id, expiresAt: row.expires_at };
}
