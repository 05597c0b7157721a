import { isForeignKeyViolation, type Sql } from "../db/client";

export type TeamRow = { id: number; name: string; members_count: number; created_at: Date; updated_at: Date };
export type MemberRow = { id: number; name: string; email: string; role: string; added_at: Date };

// Members are counted and listed only while they still belong to the team's organization.
const teamColumns = (sql: Sql) => sql`
  t.id, t.name, t.created_at, t.updated_at,
  (select count(*)::int from team_members tm join memberships m on m.user_id = tm.user_id and m.organization_id = t.organization_id
   where tm.team_id = t.id) as members_count`;

export async function listTeams(sql: Sql, organizationId: number): Promise<TeamRow[]> {
  return sql<TeamRow[]>`select ${teamColumns(sql)} from teams t where t.organization_id = ${organizationId} order by t.name, t.id`;
}

export async function findTeam(sql: Sql, organizationId: number, id: number): Promise<TeamRow | undefined> {
  const [row] = await sql<TeamRow[]>`select ${teamColumns(sql)} from teams t where t.organization_id = ${organizationId} and t.id = ${id}`;
  return row;
}

export async function listTeamMembers(sql: Sql, organizationId: number, teamId: number): Promise<MemberRow[]> {
  return sql<MemberRow[]>`
    select u.id, u.name, u.email, m.role, tm.created_at as added_at
    from team_members tm
    join users u on u.id = tm.user_id
    join memberships m on m.user_id = u.id and m.organization_id = ${organizationId}
    where tm.team_id = ${teamId}
    order by tm.created_at, u.id`;
}

export async function insertTeam(sql: Sql, organizationId: number, name: string): Promise<number> {
  const [row] = await sql<{ id: number }[]>`insert into teams (organization_id, name) values (${organizationId}, ${name}) returning id`;
  return row!.id;
}

export async function renameTeam(sql: Sql, organizationId: number, id: number, name: string): Promise<boolean> {
  const rows = await sql`update teams set name = ${name}, updated_at = now() where organization_id = ${organizationId} and id = ${id} returning id`;
  return rows.length === 1;
}

/**
 * Its numbers fall back to the organization (hosted_sim_organizations.team_id is set null), a
 * live lock held for it goes on as the organization's (hosted_sims.lock_team_id is set null,
 * migration 0300), and its webhook mappings cascade, by their foreign keys.
 */
export async function deleteTeam(sql: Sql, organizationId: number, id: number): Promise<boolean> {
  const rows = await sql`delete from teams where organization_id = ${organizationId} and id = ${id} returning id`;
  return rows.length === 1;
}

/** A user of the organization, by id or by email (case-insensitive). */
export async function findOrganizationUser(sql: Sql, organizationId: number, by: { userId?: number; email?: string }) {
  const match = by.userId !== undefined ? sql`u.id = ${by.userId}` : sql`lower(u.email) = lower(${by.email ?? ""})`;
  const [row] = await sql<{ id: number; name: string; email: string; role: string }[]>`
    select u.id, u.name, u.email, m.role
    from users u join memberships m on m.user_id = u.id and m.organization_id = ${organizationId}
    where ${match}`;
  return row;
}

/**
 * Adds a member of the team's organization; `created` is false when the user already was one (the
 * first added_at is kept). "gone" when the team was deleted meanwhile, "not_member" when the user
 * left the organization meanwhile. The membership row is share-locked by the insert, and removing
 * a member deletes that row before its team rows (admin/store.ts deleteMembership): a removal
 * either waits for the insert and then deletes the row it made, or commits first and the insert
 * finds no membership. Before, a removal racing an addition left a team row the user regained
 * when they joined the organization again.
 */
export async function addTeamMember(sql: Sql, teamId: number, userId: number): Promise<{ created: boolean; added_at: Date } | "gone" | "not_member"> {
  let inserted: { created_at: Date } | undefined;
  try {
    [inserted] = await sql<{ created_at: Date }[]>`
      insert into team_members (team_id, user_id)
      select t.id, m.user_id from teams t
      join (select organization_id, user_id from memberships where user_id = ${userId} for share) m on m.organization_id = t.organization_id
      where t.id = ${teamId}
      on conflict do nothing returning created_at`;
  } catch (e) {
    // A team deleted while this insert waited on its row: a foreign-key violation, not a server error.
    if (isForeignKeyViolation(e)) return "gone";
    throw e;
  }
  if (inserted) return { created: true, added_at: inserted.created_at };
  const [existing] = await sql<{ created_at: Date }[]>`select created_at from team_members where team_id = ${teamId} and user_id = ${userId}`;
  if (existing) return { created: false, added_at: existing.created_at };
  const [team] = await sql`select 1 from teams where id = ${teamId}`;
  return team ? "not_member" : "gone";
}

export async function removeTeamMember(sql: Sql, teamId: number, userId: number): Promise<boolean> {
  const rows = await sql`delete from team_members where team_id = ${teamId} and user_id = ${userId} returning user_id`;
  return rows.length === 1;
}
