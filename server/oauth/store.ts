import { type EndedTokens, inEpoch } from "../auth/store";
import type { Sql } from "../db/client";
import { randomString, sha256 } from "../lib/crypto";

export type OAuthClientRow = { id: number; client_id: string; name: string; redirect_uris: string[]; created_at: Date; updated_at: Date };
export type CodeRow = {
  id: number;
  client_id: number;
  user_id: number;
  credentials_epoch: number;
  redirect_uri: string;
  code_challenge: string;
  expired: boolean;
  used_at: Date | null;
};
export type RefreshRow = { id: number; grant_id: string; client_id: number; user_id: number; expired: boolean; used_at: Date | null; revoked: boolean };

export async function findClient(sql: Sql, clientId: string): Promise<OAuthClientRow | undefined> {
  const [row] = await sql<OAuthClientRow[]>`
    select id, client_id, name, redirect_uris, created_at, updated_at from oauth_clients where client_id = ${clientId}`;
  return row;
}

/** A code of the user who signed in in credentials epoch `epoch`; undefined (none stored) once their credentials moved on. */
export async function insertCode(
  sql: Sql,
  c: { clientId: number; userId: number; epoch: number; redirectUri: string; codeChallenge: string; ttlSeconds: number },
) {
  const code = randomString(43);
  const rows = await sql`
    insert into oauth_authorization_codes (code_hash, client_id, user_id, credentials_epoch, redirect_uri, code_challenge, expires_at)
    select ${sha256(code)}, ${c.clientId}, u.id, ${c.epoch}, ${c.redirectUri}, ${c.codeChallenge}, now() + make_interval(secs => ${c.ttlSeconds})
    from (${inEpoch(sql, c.userId, c.epoch)}) u returning id`;
  return rows.length === 1 ? code : undefined;
}

/** Locks the code row so two concurrent redemptions cannot both succeed. */
export async function lockCode(sql: Sql, code: string): Promise<CodeRow | undefined> {
  const [row] = await sql<CodeRow[]>`
    select id, client_id, user_id, credentials_epoch, redirect_uri, code_challenge, expires_at <= now() as expired, used_at
    from oauth_authorization_codes where code_hash = ${sha256(code)} for update`;
  return row;
}

export async function markCodeUsed(sql: Sql, id: number) {
  await sql`update oauth_authorization_codes set used_at = now() where id = ${id}`;
}

/** A grant of a code signed in in credentials epoch `epoch`; undefined (none made) once the user's credentials moved on. */
export async function createGrant(sql: Sql, g: { clientId: number; userId: number; codeId: number; epoch: number }): Promise<string | undefined> {
  const [row] = await sql<{ id: string }[]>`
    insert into oauth_grants (client_id, user_id, authorization_code_id)
    select ${g.clientId}, u.id, ${g.codeId} from (${inEpoch(sql, g.userId, g.epoch)}) u returning id`;
  return row?.id;
}

/** The grant an OAuth access token (its `sessions` row) was issued from; null when the row is gone. */
export async function grantOfAccessToken(sql: Sql, sessionId: number): Promise<string | null> {
  const [row] = await sql<{ grant_id: string }[]>`select grant_id from oauth_access_tokens where session_id = ${sessionId}`;
  return row?.grant_id ?? null;
}

export async function grantRevoked(tx: Sql, grantId: string): Promise<boolean> {
  const [row] = await tx<{ revoked: boolean }[]>`select revoked_at is not null as revoked from oauth_grants where id = ${grantId}`;
  return row?.revoked ?? true;
}

/** Revokes a grant: its refresh tokens stop working and its access tokens are deleted. Returns what ended (to revoke). */
export async function revokeGrant(sql: Sql, grantId: string): Promise<EndedTokens> {
  await sql`update oauth_grants set revoked_at = coalesce(revoked_at, now()) where id = ${grantId}`;
  const rows = await sql<{ id: number }[]>`
    delete from sessions where id in (select session_id from oauth_access_tokens where grant_id = ${grantId}) returning id`;
  return { sessionIds: rows.map((r) => r.id), grantIds: [grantId] };
}

export async function revokeGrantOfCode(sql: Sql, codeId: number): Promise<EndedTokens> {
  const [row] = await sql<{ id: string }[]>`select id from oauth_grants where authorization_code_id = ${codeId}`;
  return row ? revokeGrant(sql, row.id) : { sessionIds: [], grantIds: [] };
}

/**
 * Bounded cleanup, run as codes are redeemed. Codes stay a day past expiry so a late replay
 * still revokes its grant; an expired refresh token can no longer be used or replayed usefully.
 */
export async function pruneExpired(sql: Sql) {
  await sql`delete from oauth_authorization_codes where id in (
    select id from oauth_authorization_codes where expires_at < now() - interval '1 day' limit 500)`;
  await sql`delete from oauth_refresh_tokens where id in (select id from oauth_refresh_tokens where expires_at < now() limit 500)`;
}

export async function linkAccessToken(sql: Sql, sessionId: number, grantId: string) {
  await sql`insert into oauth_access_tokens (session_id, grant_id) values (${sessionId}, ${grantId})`;
}

export async function insertRefreshToken(sql: Sql, grantId: string, ttlSeconds: number) {
  const token = `rt_${randomString(40)}`;
  await sql`
    insert into oauth_refresh_tokens (token_hash, grant_id, expires_at)
    values (${sha256(token)}, ${grantId}, now() + make_interval(secs => ${ttlSeconds}))`;
  return token;
}

export async function lockRefreshToken(sql: Sql, token: string): Promise<RefreshRow | undefined> {
  const [row] = await sql<RefreshRow[]>`
    select r.id, r.grant_id, g.client_id, g.user_id, r.expires_at <= now() as expired, r.used_at, g.revoked_at is not null as revoked
    from oauth_refresh_tokens r join oauth_grants g on g.id = r.grant_id
    where r.token_hash = ${sha256(token)} for update of r`;
  return row;
}

export async function markRefreshTokenUsed(sql: Sql, id: number) {
  await sql`update oauth_refresh_tokens set used_at = now() where id = ${id}`;
}

/** The grant an OAuth access token belongs to, with its client. */
export async function findAccessTokenGrant(sql: Sql, token: string) {
  const [row] = await sql<{ session_id: number; grant_id: string; client_id: number }[]>`
    select a.session_id, a.grant_id, g.client_id
    from sessions s join oauth_access_tokens a on a.session_id = s.id join oauth_grants g on g.id = a.grant_id
    where s.token_hash = ${sha256(token)} and s.kind = 'oauth'`;
  return row;
}

/** The user named on the consent page. */
export async function findUserForConsent(sql: Sql, userId: number) {
  const [row] = await sql<{ id: number; name: string; email: string }[]>`select id, name, email from users where id = ${userId}`;
  return row;
}

/** The HMAC key of the sign-in forms: generated once, kept in `settings` so every instance shares it. */
export async function loadFormKey(sql: Sql): Promise<string> {
  await sql`insert into settings (key, value) values ('oauth_form_key', ${randomString(48)}) on conflict (key) do nothing`;
  const [row] = await sql<{ value: string }[]>`select value from settings where key = 'oauth_form_key'`;
  return row!.value;
}
