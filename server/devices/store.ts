import type { Sql } from "../db/client";
import type { DeviceStatus, SimCardStatus } from "./transitions";

export type DeviceRow = {
  id: number;
  organization_id: number;
  organization_name: string;
  android_id: string;
  device_name: string | null;
  device_model: string;
  app_version: string;
  phone_number: string | null;
  status: DeviceStatus;
  is_online: boolean;
  is_in_doze_mode: boolean;
  battery_level: number | null;
  last_seen_at: Date | null;
  config_version: number;
  messages_received_count: number;
  created_at: Date;
  updated_at: Date;
};

export type SimCardRow = {
  id: number;
  device_id: number;
  sim_slot: number | null;
  phone_number: string | null;
  status: SimCardStatus;
  signal_strength: number | null;
  hosted_sim_id: number | null;
  verification_code: string | null;
  code_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
};

const deviceColumns = (sql: Sql) => sql`
  d.id, d.organization_id, o.name as organization_name, d.android_id, d.device_name, d.device_model, d.app_version,
  d.phone_number, d.status, d.is_online, d.is_in_doze_mode, d.battery_level, d.last_seen_at, d.config_version,
  d.messages_received_count, d.created_at, d.updated_at`;

/** A device of the organization, or null (another organization's device is not found either). */
export async function findDevice(sql: Sql, organizationId: number, id: number, opts: { forUpdate?: boolean } = {}) {
  const [row] = await sql<DeviceRow[]>`
    select ${deviceColumns(sql)} from devices d join organizations o on o.id = d.organization_id
    where d.id = ${id} and d.organization_id = ${organizationId} ${opts.forUpdate ? sql`for update of d` : sql``}`;
  return row ?? null;
}

export async function listDevices(sql: Sql, organizationId: number, o: { status?: DeviceStatus; limit: number; offset: number }) {
  const filter = o.status ? sql`and d.status = ${o.status}` : sql``;
  const [count] = await sql<{ total: number }[]>`select count(*) as total from devices d where d.organization_id = ${organizationId} ${filter}`;
  const rows = await sql<DeviceRow[]>`
    select ${deviceColumns(sql)} from devices d join organizations o on o.id = d.organization_id
    where d.organization_id = ${organizationId} ${filter} order by d.id limit ${o.limit} offset ${o.offset}`;
  return { rows, total: count?.total ?? 0 };
}

export async function simCardsOf(sql: Sql, deviceIds: number[]): Promise<SimCardRow[]> {
  if (deviceIds.length === 0) return [];
  return sql<SimCardRow[]>`
    select id, device_id, sim_slot, phone_number, status, signal_strength, hosted_sim_id, verification_code, code_expires_at, created_at, updated_at
    from sim_cards where device_id = any(${deviceIds}::bigint[]) order by device_id, sim_slot nulls last, id`;
}

export async function findSimCard(sql: Sql, deviceId: number, cardId: number, opts: { forUpdate?: boolean } = {}) {
  const [row] = await sql<SimCardRow[]>`
    select id, device_id, sim_slot, phone_number, status, signal_strength, hosted_sim_id, verification_code, code_expires_at, created_at, updated_at
    from sim_cards where id = ${cardId} and device_id = ${deviceId} ${opts.forUpdate ? sql`for update` : sql``}`;
  return row ?? null;
}

export type PlanRow = { name: string; max_devices: number; monthly_messages: number; compression: boolean; priority_support: boolean; debug_mode: boolean };

/** The organization's plan; `lock` serialises registrations of one organization (max_devices). */
export async function planOf(sql: Sql, organizationId: number, opts: { lock?: boolean } = {}) {
  const [row] = await sql<PlanRow[]>`
    select p.name, p.max_devices, p.monthly_messages, p.compression, p.priority_support, p.debug_mode
    from organizations o join plans p on p.name = o.plan where o.id = ${organizationId} ${opts.lock ? sql`for update of o` : sql``}`;
  return row!;
}

/** Devices that count against max_devices: every one not revoked. */
export async function countLiveDevices(sql: Sql, organizationId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*) as n from devices where organization_id = ${organizationId} and status <> 'revoked'`;
  return row?.n ?? 0;
}

export async function findLiveDeviceByAndroidId(sql: Sql, organizationId: number, androidId: string) {
  const [row] = await sql<{ id: number }[]>`
    select id from devices where organization_id = ${organizationId} and lower(android_id) = lower(${androidId}) and status <> 'revoked'`;
  return row ?? null;
}

export async function insertDevice(
  sql: Sql,
  d: { organizationId: number; androidId: string; deviceName: string | null; deviceModel: string; appVersion: string; createdBy: number | null },
) {
  const [row] = await sql<{ id: number }[]>`
    insert into devices (organization_id, android_id, device_name, device_model, app_version, created_by)
    values (${d.organizationId}, ${d.androidId}, ${d.deviceName}, ${d.deviceModel}, ${d.appVersion}, ${d.createdBy}) returning id`;
  return row!.id;
}

export async function insertSimCard(sql: Sql, deviceId: number, slot: number, code: string, expiresAt: Date) {
  const [row] = await sql<SimCardRow[]>`
    insert into sim_cards (device_id, sim_slot, verification_code, code_expires_at)
    values (${deviceId}, ${slot}, ${code}, ${expiresAt}) returning *`;
  return row!;
}

export async function setSimCardCode(sql: Sql, cardId: number, code: string, expiresAt: Date) {
  const [row] = await sql<SimCardRow[]>`
    update sim_cards set verification_code = ${code}, code_expires_at = ${expiresAt}, updated_at = now() where id = ${cardId} returning *`;
  return row!;
}

/** Frees a code whose lifetime is over, so the unique index holds only live codes. */
export async function releaseExpiredCode(sql: Sql, code: string, now: Date) {
  await sql`update sim_cards set verification_code = null, code_expires_at = null where verification_code = ${code} and code_expires_at <= ${now}`;
}

export async function updateDeviceFields(sql: Sql, id: number, f: { device_name?: string; phone_number?: string; app_version?: string }) {
  await sql`
    update devices set device_name = coalesce(${f.device_name ?? null}, device_name), phone_number = coalesce(${f.phone_number ?? null}, phone_number),
      app_version = coalesce(${f.app_version ?? null}, app_version), config_version = config_version + 1, updated_at = now()
    where id = ${id}`;
}

export async function setDeviceStatus(sql: Sql, id: number, status: DeviceStatus) {
  await sql`update devices set status = ${status}, config_version = config_version + 1, updated_at = now() where id = ${id}`;
}

export async function bumpConfigVersion(sql: Sql, id: number) {
  await sql`update devices set config_version = config_version + 1, updated_at = now() where id = ${id}`;
}

/** API.md revoke: the device, its cards and their hosted SIMs go inactive for good. */
export async function revokeDevice(sql: Sql, id: number) {
  await sql`
    update devices set status = 'revoked', is_online = false, offline_since = null, config_version = config_version + 1, updated_at = now()
    where id = ${id}`;
  await sql`
    update hosted_sims set status = 'inactive', updated_at = now()
    where id in (select hosted_sim_id from sim_cards where device_id = ${id} and hosted_sim_id is not null)`;
  await sql`update sim_cards set status = 'inactive', verification_code = null, code_expires_at = null, updated_at = now() where device_id = ${id}`;
}

export async function updateSimCardFields(sql: Sql, cardId: number, f: { phone_number?: string; sim_slot?: number | null }) {
  const slot = "sim_slot" in f ? sql`sim_slot = ${f.sim_slot ?? null},` : sql``;
  const [row] = await sql<SimCardRow[]>`
    update sim_cards set ${slot} phone_number = coalesce(${f.phone_number ?? null}, phone_number), updated_at = now()
    where id = ${cardId} returning *`;
  return row!;
}

/** Keeps the hosted SIM's number equal to its card's (SPEC.md 4.2 update operations). */
export async function syncHostedSimNumber(sql: Sql, hostedSimId: number, number: string) {
  await sql`update hosted_sims set number = ${number}, updated_at = now() where id = ${hostedSimId}`;
}

/** A live card in the slot (a new card may take a slot only from an inactive one). */
export async function findCardInSlot(sql: Sql, deviceId: number, slot: number) {
  const [row] = await sql<{ id: number }[]>`select id from sim_cards where device_id = ${deviceId} and sim_slot = ${slot} and status <> 'inactive'`;
  return row ?? null;
}

/** A unique violation (optionally of one named constraint or index). */
export function isUniqueViolation(e: unknown, constraint?: string): boolean {
  const err = e as { code?: string; constraint_name?: string };
  return err?.code === "23505" && (!constraint || err.constraint_name === constraint);
}
