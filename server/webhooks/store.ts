import { isForeignKeyViolation, type Sql } from "../db/client";
import { notFound } from "../errors";

/** ISO 8601 UTC with milliseconds, as to_char formats it inside JSON built by SQL. */
const TS = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';

export type MappingRow = {
  id: number;
  team_id: number;
  team_name: string;
  forwarding_mode: "always" | "lock_required";
  is_active: boolean;
  created_at: string;
  updated_at: string;
};

export type IntegrationFields = {
  name: string;
  url: string;
  headers: Record<string, string>;
  timeout_seconds: number;
  retry_count: number;
  event_types: string[];
};

export type IntegrationRow = IntegrationFields & {
  id: number;
  organization_id: number;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
  mappings: MappingRow[];
};

const mappingJson = (sql: Sql) => sql`json_build_object(
  'id', m.id, 'team_id', m.team_id, 'team_name', t.name, 'forwarding_mode', m.forwarding_mode, 'is_active', m.is_active,
  'created_at', to_char(m.created_at at time zone 'UTC', ${TS}), 'updated_at', to_char(m.updated_at at time zone 'UTC', ${TS}))`;

const integrationColumns = (sql: Sql) => sql`
  i.id, i.organization_id, i.name, i.url, i.headers, i.timeout_seconds, i.retry_count, i.event_types, i.is_active, i.created_at, i.updated_at,
  coalesce((select json_agg(${mappingJson(sql)} order by m.id) from webhook_mappings m join teams t on t.id = m.team_id
            where m.webhook_integration_id = i.id), '[]'::json) as mappings`;

export function listIntegrations(sql: Sql, organizationId: number) {
  return sql<IntegrationRow[]>`select ${integrationColumns(sql)} from webhook_integrations i where i.organization_id = ${organizationId} order by i.id`;
}

/** Integrations of an organization with a mapping (active or not) to the team. */
export function listTeamIntegrations(sql: Sql, organizationId: number, teamId: number) {
  return sql<IntegrationRow[]>`
    select ${integrationColumns(sql)} from webhook_integrations i
    where i.organization_id = ${organizationId}
      and exists (select 1 from webhook_mappings m where m.webhook_integration_id = i.id and m.team_id = ${teamId})
    order by i.id`;
}

/** `forUpdate`: locked for the caller's transaction (an update that merges what the body leaves out). */
export async function findIntegration(sql: Sql, organizationId: number, id: number, o: { forUpdate?: boolean } = {}): Promise<IntegrationRow | null> {
  const [row] = await sql<IntegrationRow[]>`
    select ${integrationColumns(sql)} from webhook_integrations i where i.id = ${id} and i.organization_id = ${organizationId}
    ${o.forUpdate ? sql`for update` : sql``}`;
  return row ?? null;
}

/**
 * Integrations an organization may have (team ones included). Every event goes to each that
 * subscribes to it, so their number multiplies the deliveries of every SMS; with custom headers
 * each can hold 64 KiB that every list answers.
 */
export const MAX_INTEGRATIONS = 100;

/**
 * A new integration, or undefined when the organization has MAX_INTEGRATIONS already. Run in a
 * transaction: the organization's row is locked first, so concurrent creations count one another.
 */
export async function insertIntegration(sql: Sql, organizationId: number, f: IntegrationFields, secretSealed: string): Promise<number | undefined> {
  await sql`select 1 from organizations where id = ${organizationId} for no key update`;
  const [row] = await sql<{ id: number }[]>`
    insert into webhook_integrations (organization_id, name, url, headers, timeout_seconds, retry_count, event_types, secret_sealed)
    select ${organizationId}, ${f.name}, ${f.url}, ${sql.json(f.headers)}, ${f.timeout_seconds}, ${f.retry_count}, ${f.event_types}::text[], ${secretSealed}
    where (select count(*) from webhook_integrations where organization_id = ${organizationId}) < ${MAX_INTEGRATIONS}
    returning id`;
  return row?.id;
}

/** Re-activating clears the failure run, so the disable clock starts afresh. */
export async function updateIntegration(sql: Sql, organizationId: number, id: number, f: IntegrationFields & { is_active?: boolean }): Promise<boolean> {
  const active = f.is_active;
  const rows = await sql`
    update webhook_integrations set name = ${f.name}, url = ${f.url}, headers = ${sql.json(f.headers)},
      timeout_seconds = ${f.timeout_seconds}, retry_count = ${f.retry_count}, event_types = ${f.event_types}::text[],
      is_active = coalesce(${active ?? null}::boolean, is_active),
      failing_since = case when ${active === true} and not is_active then null else failing_since end,
      disabled_reason = case when ${active === true} then null else disabled_reason end,
      disabled_at = case when ${active === true} then null else disabled_at end,
      updated_at = now()
    where id = ${id} and organization_id = ${organizationId} returning id`;
  return rows.length > 0;
}

export async function deleteIntegration(sql: Sql, organizationId: number, id: number): Promise<boolean> {
  const rows = await sql`delete from webhook_integrations where id = ${id} and organization_id = ${organizationId} returning id`;
  return rows.length > 0;
}

export async function replaceSecret(sql: Sql, organizationId: number, id: number, secretSealed: string) {
  const [row] = await sql<{ id: number; name: string; updated_at: Date }[]>`
    update webhook_integrations set secret_sealed = ${secretSealed}, updated_at = now()
    where id = ${id} and organization_id = ${organizationId} returning id, name, updated_at`;
  return row ?? null;
}

export async function findTeam(sql: Sql, organizationId: number, teamId: number) {
  const [row] = await sql<{ id: number; name: string }[]>`select id, name from teams where id = ${teamId} and organization_id = ${organizationId}`;
  return row ?? null;
}

const mappingSelect = (sql: Sql) => sql`
  select m.id, m.team_id, t.name as team_name, m.forwarding_mode, m.is_active,
         to_char(m.created_at at time zone 'UTC', ${TS}) as created_at, to_char(m.updated_at at time zone 'UTC', ${TS}) as updated_at
  from webhook_mappings m join teams t on t.id = m.team_id`;

export function listMappings(sql: Sql, integrationId: number) {
  return sql<MappingRow[]>`${mappingSelect(sql)} where m.webhook_integration_id = ${integrationId} order by m.id`;
}

export async function findMapping(sql: Sql, integrationId: number, mappingId: number): Promise<MappingRow | null> {
  const [row] = await sql<MappingRow[]>`${mappingSelect(sql)} where m.webhook_integration_id = ${integrationId} and m.id = ${mappingId}`;
  return row ?? null;
}

export async function findMappingByTeam(sql: Sql, integrationId: number, teamId: number): Promise<MappingRow | null> {
  const [row] = await sql<MappingRow[]>`${mappingSelect(sql)} where m.webhook_integration_id = ${integrationId} and m.team_id = ${teamId}`;
  return row ?? null;
}

/** Null when the integration is already mapped to the team; 404 when the team was deleted since the caller found it. */
export async function insertMapping(sql: Sql, integrationId: number, teamId: number, mode: string): Promise<number | null> {
  const [row] = await sql<{ id: number }[]>`
    insert into webhook_mappings (webhook_integration_id, team_id, forwarding_mode) values (${integrationId}, ${teamId}, ${mode})
    on conflict (webhook_integration_id, team_id) do nothing returning id`.catch((e) =>
    Promise.reject(isForeignKeyViolation(e, "webhook_mappings_team_id_fkey") ? notFound("Team") : e),
  );
  return row?.id ?? null;
}

export async function updateMapping(sql: Sql, integrationId: number, mappingId: number, mode: string, isActive: boolean | undefined) {
  const rows = await sql`
    update webhook_mappings set forwarding_mode = ${mode}, is_active = coalesce(${isActive ?? null}::boolean, is_active), updated_at = now()
    where id = ${mappingId} and webhook_integration_id = ${integrationId} returning id`;
  return rows.length > 0;
}

export async function deleteMapping(sql: Sql, integrationId: number, mappingId: number): Promise<boolean> {
  const rows = await sql`delete from webhook_mappings where id = ${mappingId} and webhook_integration_id = ${integrationId} returning id`;
  return rows.length > 0;
}

/** What a synchronous test send needs, the sealed secret included. */
export async function findIntegrationForSend(sql: Sql, organizationId: number, id: number) {
  const [row] = await sql<{ id: number; name: string; url: string; headers: Record<string, string>; timeout_seconds: number; secret_sealed: string }[]>`
    select id, name, url, headers, timeout_seconds, secret_sealed from webhook_integrations where id = ${id} and organization_id = ${organizationId}`;
  return row ?? null;
}
