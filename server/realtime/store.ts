import type { Sql } from "../db/client";
import { randomString } from "../lib/crypto";
import type { Credential } from "./grants";

/**
 * The realtime app credentials: generated once and kept in `settings`, so every instance on the
 * database signs and checks with the same pair. Two instances starting together agree because
 * the first insert wins and both read it back.
 */
export async function loadAppCredentials(sql: Sql): Promise<{ key: string; secret: string }> {
  const candidates = {
    pusher_app_key: randomString(20, "abcdefghijklmnopqrstuvwxyz0123456789"),
    pusher_app_secret: randomString(40),
  };
  for (const [key, value] of Object.entries(candidates)) {
    await sql`insert into settings (key, value) values (${key}, ${value}) on conflict (key) do nothing`;
  }
  const rows = await sql<{ key: string; value: string }[]>`
    select key, value from settings where key in ('pusher_app_key', 'pusher_app_secret')`;
  const get = (k: string) => rows.find((r) => r.key === k)!.value;
  return { key: get("pusher_app_key"), secret: get("pusher_app_secret") };
}

/** The organizations below are ones the user is a member of; null when there is none. */

export async function userOrganizationMember(sql: Sql, userId: number, organizationId: number): Promise<number | null> {
  const [row] = await sql<{ id: number }[]>`
    select organization_id as id from memberships where user_id = ${userId} and organization_id = ${organizationId}`;
  return row?.id ?? null;
}

export async function userTeamOrganization(sql: Sql, userId: number, teamId: number): Promise<number | null> {
  const [row] = await sql<{ id: number }[]>`
    select t.organization_id as id from teams t
    join memberships m on m.organization_id = t.organization_id and m.user_id = ${userId}
    where t.id = ${teamId}`;
  return row?.id ?? null;
}

export async function userDeviceOrganization(sql: Sql, userId: number, deviceId: number): Promise<number | null> {
  const [row] = await sql<{ id: number }[]>`
    select d.organization_id as id from devices d
    join memberships m on m.organization_id = d.organization_id and m.user_id = ${userId}
    where d.id = ${deviceId}`;
  return row?.id ?? null;
}

/**
 * The organization through which a user sees a number: the one they act in when it is attached,
 * else another of theirs that is. One organization per subscription keeps delivery exactly once.
 */
export async function userNumberOrganization(sql: Sql, userId: number, hostedSimId: number, actingOrganizationId: number): Promise<number | null> {
  const [row] = await sql<{ id: number }[]>`
    select hso.organization_id as id from hosted_sim_organizations hso
    join memberships m on m.organization_id = hso.organization_id and m.user_id = ${userId}
    where hso.hosted_sim_id = ${hostedSimId}
    order by (hso.organization_id = ${actingOrganizationId}) desc, hso.organization_id
    limit 1`;
  return row?.id ?? null;
}

export type CredentialCheck = {
  organizationId: number;
  credential: Omit<Credential, "userId">;
  /** An API key's permissions when it authorized (grants.ts `Grant`). */
  permissions?: readonly string[];
};

/**
 * Which of these credentials still stand for their organization (the indexes of those that do):
 * a session unexpired and its user still a member; an OAuth token's grant not revoked, with a
 * token still usable (its refresh token unused and unexpired, or an unexpired access token), and
 * its user still a member (the extension refreshes; the token it subscribed with expiring is no
 * revocation: docs/events.md); or the same API key (id and
 * digest: a regenerated key is another credential) still in that organization and holding the
 * permissions it authorized with, no more and no fewer (a permission change revokes the key's
 * grants: one made before it would otherwise still deliver the families it lost). One statement
 * for any number of subscriptions.
 */
export async function standingCredentials(sql: Sql, checks: CredentialCheck[]): Promise<Set<number>> {
  if (checks.length === 0) return new Set();
  const rows = checks.map((c, i) => ({
    i,
    org: c.organizationId,
    session_id: c.credential.sessionId,
    grant_id: c.credential.grantId ?? null,
    api_key_id: c.credential.apiKeyId,
    key_digest: c.credential.keyDigest,
    permissions: c.permissions ?? null,
  }));
  const standing = await sql<{ i: number }[]>`
    select g.i from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb)
      as g(i int, org bigint, session_id bigint, grant_id uuid, api_key_id bigint, key_digest text, permissions text[])
    where case
      when g.grant_id is not null then exists (
        select 1 from oauth_grants og join memberships m on m.user_id = og.user_id and m.organization_id = g.org
        where og.id = g.grant_id and og.revoked_at is null and (
          exists (select 1 from oauth_refresh_tokens r where r.grant_id = og.id and r.used_at is null and r.expires_at > now())
          or exists (select 1 from oauth_access_tokens a join sessions s on s.id = a.session_id where a.grant_id = og.id and s.expires_at > now())))
      when g.session_id is not null then exists (
        select 1 from sessions s join memberships m on m.user_id = s.user_id and m.organization_id = g.org
        where s.id = g.session_id and s.expires_at > now())
      when g.api_key_id is not null then exists (
        select 1 from api_keys k
        where k.id = g.api_key_id and k.organization_id = g.org and substring(k.key_hash from 1 for 8) = decode(g.key_digest, 'hex')
          and k.permissions @> g.permissions and k.permissions <@ g.permissions)
      else false
    end`;
  return new Set(standing.map((r) => r.i));
}
