import type { Permission } from "../auth/caller";
import type { Sql } from "../db/client";

export type ApiKeyRow = {
  id: number;
  name: string;
  key_prefix: string;
  permissions: Permission[];
  last_used_at: Date | null;
  created_at: Date;
  updated_at: Date;
};

const columns = (sql: Sql) => sql`id, name, key_prefix, permissions, last_used_at, created_at, updated_at`;

export async function listApiKeys(sql: Sql, organizationId: number): Promise<ApiKeyRow[]> {
  return sql<ApiKeyRow[]>`select ${columns(sql)} from api_keys where organization_id = ${organizationId} order by id`;
}

export async function findApiKey(sql: Sql, organizationId: number, id: number): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`select ${columns(sql)} from api_keys where organization_id = ${organizationId} and id = ${id}`;
  return row;
}

export async function insertApiKey(
  sql: Sql,
  key: { organizationId: number; name: string; permissions: Permission[]; prefix: string; hash: Buffer; createdBy: number | null },
): Promise<ApiKeyRow> {
  const [row] = await sql<ApiKeyRow[]>`
    insert into api_keys (organization_id, name, key_prefix, key_hash, permissions, created_by)
    values (${key.organizationId}, ${key.name}, ${key.prefix}, ${key.hash}, ${key.permissions}, ${key.createdBy})
    returning ${columns(sql)}`;
  return row!;
}

/** Renames the key and/or sets its permissions; `permissionsChanged` says whether its set of permissions is another now (the row locked, so two changes are judged one after the other). */
export async function updateApiKey(
  sql: Sql,
  organizationId: number,
  id: number,
  changes: { name?: string; permissions?: Permission[] },
): Promise<{ row: ApiKeyRow; permissionsChanged: boolean } | undefined> {
  const [found] = await sql<(ApiKeyRow & { permissions_changed: boolean })[]>`
    update api_keys k set
      name = coalesce(${changes.name ?? null}, name),
      permissions = coalesce(${changes.permissions ?? null}::text[], permissions),
      updated_at = now()
    from (select id as key_id, permissions as before from api_keys where organization_id = ${organizationId} and id = ${id} for update) old
    where k.id = old.key_id
    returning ${columns(sql)}, not (k.permissions @> old.before and old.before @> k.permissions) as permissions_changed`;
  if (!found) return undefined;
  const { permissions_changed, ...row } = found;
  return { row, permissionsChanged: permissions_changed };
}

/** Replaces the key's secret: the old key's hash is gone, so it answers 401 from the next request on. */
export async function replaceApiKeySecret(sql: Sql, organizationId: number, id: number, secret: { prefix: string; hash: Buffer }) {
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys set key_prefix = ${secret.prefix}, key_hash = ${secret.hash}, last_used_at = null, updated_at = now()
    where organization_id = ${organizationId} and id = ${id}
    returning ${columns(sql)}`;
  return row;
}

export async function deleteApiKey(sql: Sql, organizationId: number, id: number): Promise<boolean> {
  const rows = await sql`delete from api_keys where organization_id = ${organizationId} and id = ${id} returning id`;
  return rows.length === 1;
}
