import type { Role } from "../auth/caller";
import type { EndedTokens } from "../auth/store";
import type { Sql } from "../db/client";

export type OrganizationSummary = { id: number; name: string; plan: string };
export type OAuthClientRow = { client_id: string; name: string; redirect_uris: string[]; created_at: Date; updated_at: Date };

export async function insertOrganization(sql: Sql, name: string, plan: string): Promise<OrganizationSummary> {
  const [row] = await sql<OrganizationSummary[]>`insert into organizations (name, plan) values (${name}, ${plan}) returning id, name, plan`;
  return row!;
}

export async function updatePlan(sql: Sql, id: number, plan: string): Promise<OrganizationSummary | undefined> {
  const [row] = await sql<OrganizationSummary[]>`update organizations set plan = ${plan}, updated_at = now() where id = ${id} returning id, name, plan`;
  return row;
}

/** The organization's member count, or undefined when it does not exist; locks it so concurrent adds count right. */
export async function lockOrganizationMembers(sql: Sql, id: number): Promise<number | undefined> {
  const [row] = await sql<{ members: number }[]>`
    select (select count(*) from memberships where organization_id = o.id)::int as members from organizations o where o.id = ${id} for update`;
  return row?.members;
}

export async function findUserIdByEmail(sql: Sql, email: string): Promise<{ id: number; email: string } | undefined> {
  const [row] = await sql<{ id: number; email: string }[]>`select id, email from users where lower(email) = lower(${email})`;
  return row;
}

const BOOTSTRAP_LOCK = 7_220_432;

/** Two instances starting on one empty database create one first owner. */
export async function lockBootstrap(sql: Sql) {
  await sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`;
}

export async function anyUserExists(sql: Sql): Promise<boolean> {
  return (await sql`select 1 from users limit 1`).length > 0;
}

export async function insertUser(sql: Sql, u: { name: string; email: string; passwordHash: string }): Promise<{ id: number; email: string }> {
  const [row] = await sql<{ id: number; email: string }[]>`
    insert into users (name, email, password_hash) values (${u.name}, ${u.email}, ${u.passwordHash}) returning id, email`;
  return row!;
}

/** Adds a membership, or changes its role when `role` is given; returns the role before (null: new) and after. */
export async function upsertMembership(sql: Sql, m: { userId: number; organizationId: number; role: string; keepRole: boolean }) {
  const [before] = await sql<{ role: string }[]>`
    select role from memberships where user_id = ${m.userId} and organization_id = ${m.organizationId} for update`;
  const [after] = await sql<{ role: string }[]>`
    insert into memberships (user_id, organization_id, role) values (${m.userId}, ${m.organizationId}, ${m.role})
    on conflict (user_id, organization_id) do update set role = case when ${m.keepRole} then memberships.role else excluded.role end
    returning role`;
  return { before: before?.role ?? null, after: after!.role };
}

/**
 * Ends a membership and the user's places in the organization's teams; answers the role it had,
 * null when there was no membership. The membership first, in its own statement: it waits for a
 * team addition holding the row (teams/store.ts addTeamMember), so the team rows' delete, a
 * statement later, sees what that addition inserted.
 */
export async function deleteMembership(sql: Sql, userId: number, organizationId: number): Promise<Role | null> {
  const [row] = await sql<{ role: Role }[]>`delete from memberships where user_id = ${userId} and organization_id = ${organizationId} returning role`;
  await sql`delete from team_members where user_id = ${userId} and team_id in (select id from teams where organization_id = ${organizationId})`;
  return row?.role ?? null;
}

export async function countOwners(sql: Sql, organizationId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from memberships where organization_id = ${organizationId} and role = 'owner'`;
  return row!.n;
}

export async function insertOAuthClient(sql: Sql, c: { clientId: string; name: string; redirectUris: string[] }): Promise<OAuthClientRow> {
  const [row] = await sql<OAuthClientRow[]>`
    insert into oauth_clients (client_id, name, redirect_uris) values (${c.clientId}, ${c.name}, ${c.redirectUris})
    returning client_id, name, redirect_uris, created_at, updated_at`;
  return row!;
}

export async function listOAuthClients(sql: Sql): Promise<OAuthClientRow[]> {
  return sql<OAuthClientRow[]>`select client_id, name, redirect_uris, created_at, updated_at from oauth_clients order by id`;
}

/** Deletes a client with its grants and access tokens (session rows); returns what ended, or null when there is no such client. */
export async function deleteOAuthClient(sql: Sql, clientId: string): Promise<EndedTokens | null> {
  const sessions = await sql<{ id: number }[]>`delete from sessions where id in (
    select a.session_id from oauth_access_tokens a join oauth_grants g on g.id = a.grant_id
    join oauth_clients c on c.id = g.client_id where c.client_id = ${clientId}) returning id`;
  const grants = await sql<{ id: string }[]>`
    select g.id from oauth_grants g join oauth_clients c on c.id = g.client_id where c.client_id = ${clientId}`;
  const rows = await sql`delete from oauth_clients where client_id = ${clientId} returning id`;
  return rows.length > 0 ? { sessionIds: sessions.map((s) => s.id), grantIds: grants.map((g) => g.id) } : null;
}
