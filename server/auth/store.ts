import type { Sql } from "../db/client";
import type { UserRow } from "./caller";

/** `credentials_epoch`: the epoch the password was read in (a session is issued only while it is current: `issueSession`). */
export type LoginUserRow = UserRow & { password_hash: string; credentials_epoch: number };
export type TotpUserRow = UserRow & { totp_secret: string | null; totp_last_step: number | null };

export async function findUserByEmail(sql: Sql, email: string): Promise<LoginUserRow | undefined> {
  const [row] = await sql<LoginUserRow[]>`
    select id, name, email, email_verified_at, totp_enabled, created_at, updated_at, password_hash, credentials_epoch
    from users where lower(email) = lower(${email})`;
  return row;
}

export async function findTotpUser(sql: Sql, userId: number): Promise<TotpUserRow | undefined> {
  const [row] = await sql<TotpUserRow[]>`
    select id, name, email, email_verified_at, totp_enabled, created_at, updated_at, totp_secret, totp_last_step
    from users where id = ${userId}`;
  return row;
}

/** The unexpired session or OAuth access token of this digest, with its user; null when none. */
export async function findLiveSession(sql: Sql, tokenHash: Buffer): Promise<{ id: number; userId: number } | null> {
  const [row] = await sql<{ id: number; user_id: number }[]>`select id, user_id from sessions where token_hash = ${tokenHash} and expires_at > now()`;
  return row ? { id: row.id, userId: row.user_id } : null;
}

export async function deleteSession(sql: Sql, sessionId: number) {
  await sql`delete from sessions where id = ${sessionId}`;
}

/**
 * The user's row while `epoch` is their credentials epoch, share-locked until the statement's
 * transaction ends: what a statement selecting from it inserts (a session, a challenge, a code)
 * is inserted only in that epoch. `deleteUserSessions` moves the epoch on under a row lock first,
 * so either the insert waits for it and then finds the epoch moved (nothing inserted), or it
 * commits first and the sign-out that follows sees, and ends, what it inserted.
 */
export const inEpoch = (sql: Sql, userId: number, epoch: number) => sql`select id from users where id = ${userId} and credentials_epoch = ${epoch} for share`;

/**
 * The user's credentials epoch (`inEpoch`); undefined for no such user. `share`: the row stays
 * share-locked until the transaction ends, so a sign-out everywhere else waits for it.
 */
export async function credentialsEpoch(sql: Sql, userId: number, o: { share?: boolean } = {}): Promise<number | undefined> {
  const [row] = await sql<{ credentials_epoch: number }[]>`
    select credentials_epoch from users where id = ${userId} ${o.share ? sql`for share` : sql``}`;
  return row?.credentials_epoch;
}

/** A 2FA challenge of the password checked in `epoch`; false (nothing stored) once the user's credentials moved past it. */
export async function insertChallenge(sql: Sql, userId: number, tokenHash: Buffer, ttlSeconds: number, epoch: number): Promise<boolean> {
  await sql`delete from login_challenges where user_id = ${userId} and (expires_at < now() or used_at is not null)`;
  const rows = await sql`
    insert into login_challenges (user_id, token_hash, expires_at, credentials_epoch)
    select ${userId}, ${tokenHash}, now() + make_interval(secs => ${ttlSeconds}), ${epoch}
    from (${inEpoch(sql, userId, epoch)}) u returning id`;
  return rows.length === 1;
}

/**
 * Spends one of a challenge's attempts before its code is checked, so parallel guesses can never
 * exceed `maxAttempts`. Returns nothing for an unknown, used, expired or burnt tmp_token, or one
 * of an earlier credentials epoch (its password changed, or its user signed out everywhere else).
 */
export async function claimChallengeAttempt(sql: Sql, tokenHash: Buffer, maxAttempts: number) {
  const [row] = await sql<{ id: number; user_id: number; credentials_epoch: number }[]>`
    update login_challenges c set failed_attempts = failed_attempts + 1
    from users u
    where c.token_hash = ${tokenHash} and c.used_at is null and c.expires_at > now() and c.failed_attempts < ${maxAttempts}
      and u.id = c.user_id and u.credentials_epoch = c.credentials_epoch
    returning c.id, c.user_id, c.credentials_epoch`;
  return row;
}

/** Marks a challenge used (the claimed attempt was not a failure); false when another request used it first. */
export async function completeChallenge(sql: Sql, challengeId: number): Promise<boolean> {
  const rows = await sql`
    update login_challenges set used_at = now(), failed_attempts = failed_attempts - 1
    where id = ${challengeId} and used_at is null returning id`;
  return rows.length === 1;
}

export async function saveTotpSecret(sql: Sql, userId: number, secret: string) {
  await sql`update users set totp_secret = ${secret}, totp_last_step = null, updated_at = now() where id = ${userId} and not totp_enabled`;
}

/**
 * Records `step` as the last accepted TOTP time step, only if it is newer than the last one:
 * false means the code was already used (a replay), even by a concurrent request.
 */
export async function acceptTotpStep(sql: Sql, userId: number, step: number): Promise<boolean> {
  const rows = await sql`
    update users set totp_last_step = ${step}
    where id = ${userId} and (totp_last_step is null or totp_last_step < ${step}) returning id`;
  return rows.length === 1;
}

/**
 * Turns 2FA on with the secret a code was checked against (undefined when a setup replaced it
 * meanwhile: on, it would ask for codes of a secret the user never saw), or off.
 */
export async function setTotpEnabled(sql: Sql, userId: number, change: { enabled: true; secret: string } | { enabled: false }): Promise<UserRow | undefined> {
  const set = change.enabled ? sql`totp_enabled = true` : sql`totp_enabled = false, totp_secret = null, totp_last_step = null`;
  const [row] = await sql<UserRow[]>`
    update users set ${set}, updated_at = now()
    where id = ${userId} ${change.enabled ? sql`and totp_secret = ${change.secret}` : sql``}
    returning id, name, email, email_verified_at, totp_enabled, created_at, updated_at`;
  return row;
}

/** Every organization a user belongs to, with their role, oldest membership first. */
export async function listMemberships(sql: Sql, userId: number) {
  return sql<{ id: number; name: string; role: string }[]>`
    select o.id, o.name, m.role from memberships m join organizations o on o.id = m.organization_id
    where m.user_id = ${userId} order by m.created_at, o.id`;
}

/**
 * The user an API key answers for in GET /api/me (docs/api-notes.md "GET /api/me with an API
 * key"): its creator while still a member of the key's organization, else the organization's
 * first owner; undefined if it has no owner either.
 */
export async function findApiKeyUser(sql: Sql, apiKeyId: number): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    select u.id, u.name, u.email, u.email_verified_at, u.totp_enabled, u.created_at, u.updated_at
    from api_keys k
    join memberships m on m.organization_id = k.organization_id
    join users u on u.id = m.user_id
    where k.id = ${apiKeyId} and (u.id = k.created_by or m.role = 'owner')
    order by coalesce(u.id = k.created_by, false) desc, m.created_at, u.id
    limit 1`;
  return row;
}

export async function findPasswordHash(sql: Sql, userId: number): Promise<string | undefined> {
  const [row] = await sql<{ password_hash: string }[]>`select password_hash from users where id = ${userId}`;
  return row?.password_hash;
}

export async function setPasswordHash(sql: Sql, userId: number, passwordHash: string) {
  await sql`update users set password_hash = ${passwordHash}, updated_at = now() where id = ${userId}`;
}

export type SessionRow = { id: number; kind: "session" | "oauth"; created_at: Date; last_used_at: Date | null; expires_at: Date };

/** A user's live session and OAuth tokens, most recently used first. */
export async function listUserSessions(sql: Sql, userId: number, limit: number): Promise<SessionRow[]> {
  return sql<SessionRow[]>`
    select id, kind, created_at, last_used_at, expires_at from sessions
    where user_id = ${userId} and expires_at > now()
    order by coalesce(last_used_at, created_at) desc, id desc limit ${limit}`;
}

export type SessionChoice = { only: number } | { except: number } | { all: true };

/** Tokens a change ended: sessions and OAuth access tokens (`sessions` rows), and OAuth grants (each revoked as a whole, removed access tokens included). */
export type EndedTokens = { sessionIds: number[]; grantIds: string[] };

/**
 * Deletes one of the user's tokens, or every one but one, or every one (these two move their
 * credentials epoch on, ending sign-ins under way); answers what it ended (never another user's). An OAuth token
 * ends with its grant (its refresh tokens stop working, its other access tokens are deleted
 * too), or a refresh token would mint a new one: for one token, that token's grant; for every
 * one but one, every grant of the user but the kept token's, those whose access tokens have
 * expired (refresh tokens outlive them) included.
 */
export async function deleteUserSessions(sql: Sql, userId: number, which: SessionChoice): Promise<EndedTokens> {
  // Every one but one: sign-ins under way end too (`inEpoch`). Its own statement, so the delete's
  // snapshot, taken after the row lock, sees what an issuance holding the lock committed.
  if (!("only" in which)) await sql`update users set credentials_epoch = credentials_epoch + 1 where id = ${userId}`;
  const filter = "only" in which ? sql`s.id = ${which.only}` : "except" in which ? sql`s.id <> ${which.except}` : sql`true`;
  const grantFilter =
    "only" in which
      ? sql`g.id in (select grant_id from oauth_access_tokens where session_id = ${which.only})`
      : "except" in which
        ? sql`g.id not in (select grant_id from oauth_access_tokens where session_id = ${which.except})`
        : sql`true`;
  const [row] = await sql<{ session_ids: number[]; grant_ids: string[] }[]>`
    with grants as (
      update oauth_grants g set revoked_at = now() where g.user_id = ${userId} and g.revoked_at is null and ${grantFilter} returning g.id),
    ended as (
      delete from sessions s where s.user_id = ${userId}
        and (${filter} or s.id in (select session_id from oauth_access_tokens where grant_id in (select id from grants)))
      returning s.id)
    select coalesce((select array_agg(id) from ended), '{}')::int8[] as session_ids,
           coalesce((select array_agg(id::text) from grants), '{}')::text[] as grant_ids`;
  return { sessionIds: row!.session_ids.map(Number), grantIds: row!.grant_ids };
}
