import { isForeignKeyViolation, type Sql } from "../db/client";
import { validationFailed } from "../errors";

/** A timestamp column as API.md's ISO UTC string with milliseconds. */
export const isoColumn = (sql: Sql, column: string) => sql`to_char(${sql.unsafe(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** One organization's attachment to a number: its alias and team, and what it may see of its traffic. */
export type HostedSimAttachment = {
  organization_id: number;
  organization_name: string;
  alias: string | null;
  team_id: number | null;
  team_name: string | null;
};

/**
 * One hosted SIM as a set of organizations sees it (the caller's read scope, or the one
 * organization a write acts in): their own attachments, never another organization's.
 */
export type HostedSimRow = {
  id: number;
  number: string;
  provider: string;
  status: string;
  type: string;
  shared_max_orgs: number;
  /** The viewing organizations' attachments, by organization id. */
  attachments: HostedSimAttachment[];
  /** Inbound messages any viewing organization may see, each counted once. */
  messages_received_count: number;
  lock_live: boolean;
  lock_organization_id: number | null;
  lock_team_id: number | null;
  lock_user_id: number | null;
  locked_until: string | null;
  lock_release_on_message: boolean;
  lock_sender: string | null;
  created_at: string;
  updated_at: string;
};

/** A bring-your-own-SIM number (proved by a phone, byos-store.ts): its sends go through its phone; a pool number's through the provider. */
export const isByosNumber = (sim: Pick<HostedSimRow, "provider" | "type">) => sim.type === "virtual" && sim.provider === "byos";

export type HostedSimFilter = { id?: number; type?: string; status?: string; teamId?: number };

/** The numbers attached to any of `organizationIds`, each once (SPEC.md 1.4: a user reaches the SIMs of all their organizations). */
export async function listHostedSims(sql: Sql, organizationIds: number[], f: HostedSimFilter = {}): Promise<HostedSimRow[]> {
  return sql<HostedSimRow[]>`
    select h.id, h.number, h.provider, h.status, h.type, h.shared_max_orgs,
           json_agg(json_build_object(
             'organization_id', a.organization_id, 'organization_name', o.name, 'alias', a.alias,
             'team_id', a.team_id, 'team_name', t.name
           ) order by a.organization_id) as attachments,
           -- One viewer: its kept count. Several (rare): the messages any of them sees, once each.
           case when count(*) = 1 then max(coalesce(c.inbound, 0))
                else (select count(distinct v.message_id) from message_visibility v
                      where v.hosted_sim_id = h.id and v.organization_id = any(${organizationIds}::bigint[]) and not v.outbound)
           end::int as messages_received_count,
           (h.lock_organization_id is not null and h.locked_until > now()) as lock_live,
           h.lock_organization_id, h.lock_team_id, h.lock_user_id, ${isoColumn(sql, "h.locked_until")} as locked_until,
           h.lock_release_on_message, h.lock_sender,
           ${isoColumn(sql, "h.created_at")} as created_at, ${isoColumn(sql, "h.updated_at")} as updated_at
    from hosted_sim_organizations a
    join hosted_sims h on h.id = a.hosted_sim_id
    join organizations o on o.id = a.organization_id
    left join teams t on t.id = a.team_id
    left join message_visibility_counts c on c.organization_id = a.organization_id and c.hosted_sim_id = h.id
    where a.organization_id = any(${organizationIds}::bigint[])
      ${f.id !== undefined ? sql`and h.id = ${f.id}` : sql``}
      ${f.type !== undefined ? sql`and h.type = ${f.type}` : sql``}
      ${f.status !== undefined ? sql`and h.status = ${f.status}` : sql``}
      ${
        f.teamId !== undefined
          ? sql`and exists (select 1 from hosted_sim_organizations x
                            where x.hosted_sim_id = h.id and x.team_id = ${f.teamId} and x.organization_id = any(${organizationIds}::bigint[]))`
          : sql``
      }
    group by h.id
    order by h.id`;
}

export async function findHostedSim(sql: Sql, organizationIds: number[], id: number): Promise<HostedSimRow | null> {
  const [row] = await listHostedSims(sql, organizationIds, { id });
  return row ?? null;
}

/** The attachment of the organization a write acts in (rows read for it hold that one). */
export const attachmentOf = (row: HostedSimRow, organizationId: number) => row.attachments.find((a) => a.organization_id === organizationId) ?? null;

export async function teamBelongsTo(sql: Sql, teamId: number, organizationId: number): Promise<boolean> {
  const [row] = await sql`select 1 from teams where id = ${teamId} and organization_id = ${organizationId}`;
  return row !== undefined;
}

export async function setAlias(sql: Sql, organizationId: number, hostedSimId: number, alias: string | null): Promise<boolean> {
  const rows = await sql`
    update hosted_sim_organizations set alias = ${alias}
    where hosted_sim_id = ${hostedSimId} and organization_id = ${organizationId} returning 1`;
  return rows.length > 0;
}

export type Attachment = { organizationId: number; teamId?: number | null; alias?: string | null };

/** Whether another organization than `organizationId` holds the number's lock now: then the number is not this organization's to send from or lock. */
export const lockedByOther = (sim: Pick<HostedSimRow, "lock_live" | "lock_organization_id">, organizationId: number) =>
  sim.lock_live && sim.lock_organization_id !== organizationId;

/** The 422 of a `team_id` that is no team of the organization (API notes: missing and foreign teams alike). */
export const notATeam = () => validationFailed({ team_id: ["is not a team of your organization"] });

/** An attachment's team deleted after the caller checked it: the team is missing, not a server error. */
const teamGone = (e: unknown) => (isForeignKeyViolation(e, "hosted_sim_organizations_team_id_fkey") ? notATeam() : e);

export async function attachOrganization(sql: Sql, hostedSimId: number, a: Attachment) {
  await sql`
    insert into hosted_sim_organizations (hosted_sim_id, organization_id, alias, team_id)
    values (${hostedSimId}, ${a.organizationId}, ${a.alias ?? null}, ${a.teamId ?? null})`.catch((e) => Promise.reject(teamGone(e)));
  await sql`update hosted_sims set updated_at = now() where id = ${hostedSimId}`;
}

/** The seat count of a number, read after its row is locked FOR UPDATE (see claims.ts). */
export async function seatsOf(sql: Sql, hostedSimId: number, organizationId: number) {
  const [row] = await sql<{ taken: number; mine: boolean }[]>`
    select count(*)::int as taken, coalesce(bool_or(organization_id = ${organizationId}), false) as mine
    from hosted_sim_organizations where hosted_sim_id = ${hostedSimId}`;
  return row!;
}

export type LockedSim = { id: number; type: string; status: string; shared_max_orgs: number };

/** Locks one hosted SIM row for the rest of the transaction: every attachment goes through here. */
export async function lockHostedSimRow(sql: Sql, id: number): Promise<LockedSim | null> {
  const [row] = await sql<LockedSim[]>`select id, type, status, shared_max_orgs from hosted_sims where id = ${id} for update`;
  return row ?? null;
}

/** Free pool numbers (no organization yet) but those `except` (tried already), oldest first; the caller locks and re-checks one. */
export async function freePoolCandidates(sql: Sql, limit: number, except: number[]): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    select h.id from hosted_sims h
    where h.type = 'shared' and h.status = 'active' and h.id <> all(${except}::bigint[])
      and not exists (select 1 from hosted_sim_organizations a where a.hosted_sim_id = h.id)
    order by h.id limit ${limit}`;
  return rows.map((r) => r.id);
}

/** Shared numbers already owned by someone, with room, not held by this organization: fewest organizations first. */
export async function sharedCandidates(sql: Sql, organizationId: number, limit: number, except: number[]): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    select h.id from hosted_sims h
    join hosted_sim_organizations a on a.hosted_sim_id = h.id
    where h.type = 'shared' and h.status = 'active' and h.id <> all(${except}::bigint[])
    group by h.id
    having count(*) < h.shared_max_orgs and not bool_or(a.organization_id = ${organizationId})
    order by count(*), h.id limit ${limit}`;
  return rows.map((r) => r.id);
}

/**
 * True when the hosted SIM is the number of an active SIM card of one of the organization's own
 * devices (a verified BYOS number). Reads the device feature's tables for this check only.
 */
export async function isOwnVerifiedByosNumber(sql: Sql, organizationId: number, hostedSimId: number): Promise<boolean> {
  const [row] = await sql`
    select 1 from sim_cards s join devices d on d.id = s.device_id
    where s.hosted_sim_id = ${hostedSimId} and s.status = 'active' and d.organization_id = ${organizationId} and d.status <> 'revoked'
    limit 1`;
  return row !== undefined;
}

/** Upserts an organization's attachment to its own BYOS number; team and alias change only when given. */
export async function upsertVirtualAttachment(sql: Sql, hostedSimId: number, a: Attachment) {
  await sql`
    insert into hosted_sim_organizations (hosted_sim_id, organization_id, alias, team_id)
    values (${hostedSimId}, ${a.organizationId}, ${a.alias ?? null}, ${a.teamId ?? null})
    on conflict (hosted_sim_id, organization_id) do update set
      alias = case when ${a.alias !== undefined} then excluded.alias else hosted_sim_organizations.alias end,
      team_id = case when ${a.teamId !== undefined} then excluded.team_id else hosted_sim_organizations.team_id end`.catch((e) => Promise.reject(teamGone(e)));
  await sql`update hosted_sims set updated_at = now() where id = ${hostedSimId}`;
}

/** Organizations attached to a number (event fan-out). */
export async function attachedOrganizations(sql: Sql, hostedSimId: number): Promise<number[]> {
  const rows = await sql<{ organization_id: number }[]>`select organization_id from hosted_sim_organizations where hosted_sim_id = ${hostedSimId}`;
  return rows.map((r) => r.organization_id);
}

/** The device and slot that hold a BYOS number (its active SIM card): outbound SMS on it go through that device. */
export async function byosDeviceOf(
  sql: Sql,
  hostedSimId: number,
): Promise<{ device_id: number; sim_slot: number | null; device_status: string; is_online: boolean } | null> {
  const [row] = await sql<{ device_id: number; sim_slot: number | null; device_status: string; is_online: boolean }[]>`
    select s.device_id, s.sim_slot, d.status as device_status, d.is_online from sim_cards s join devices d on d.id = s.device_id
    where s.hosted_sim_id = ${hostedSimId} and s.status = 'active' order by s.id desc limit 1`;
  return row ?? null;
}
