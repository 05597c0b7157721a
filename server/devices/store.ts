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
  /** A number asked for by PATCH and not proven yet (docs/api-notes.md "Numbers change only by proof"). */
  claimed_number: string | null;
  verification_code: string | null;
  code_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
};

/**
 * The one definition of a device's phone number (SPEC.md 2.9, 2.12): the proven number of its
 * active SIM card in the lowest slot (a card without a slot last), null when it has none. Derived,
 * never stored, so it follows every verification, deactivation and revocation of its cards.
 */
export const devicePhoneNumber = (sql: Sql) => sql`
  (select c.phone_number from sim_cards c where c.device_id = d.id and c.status = 'active'
   order by c.sim_slot nulls last, c.id limit 1)`;

const deviceColumns = (sql: Sql) => sql`
  d.id, d.organization_id, o.name as organization_name, d.android_id, d.device_name, d.device_model, d.app_version,
  ${devicePhoneNumber(sql)} as phone_number, d.status, d.is_online, d.is_in_doze_mode, d.battery_level, d.last_seen_at, d.config_version,
  d.messages_received_count, d.created_at, d.updated_at`;

const cardColumns = (sql: Sql) => sql`
  id, device_id, sim_slot, phone_number, status, signal_strength, hosted_sim_id, claimed_number, verification_code, code_expires_at,
  created_at, updated_at`;

/**
 * A device of the organization (a write's) or of any of the organizations (a read's scope), or
 * null: another organization's device is not found either.
 */
export async function findDevice(sql: Sql, organizationId: number | number[], id: number, opts: { forUpdate?: boolean } = {}) {
  const organizations = Array.isArray(organizationId) ? organizationId : [organizationId];
  const [row] = await sql<DeviceRow[]>`
    select ${deviceColumns(sql)} from devices d join organizations o on o.id = d.organization_id
    where d.id = ${id} and d.organization_id = any(${organizations}::bigint[]) ${opts.forUpdate ? sql`for update of d` : sql``}`;
  return row ?? null;
}

/** The devices of the organizations (SPEC.md 4.2: "devices of the caller's organizations"), by id. */
export async function listDevices(sql: Sql, organizationIds: number[], o: { status?: DeviceStatus; limit: number; offset: number }) {
  const filter = o.status ? sql`and d.status = ${o.status}` : sql``;
  const scope = sql`d.organization_id = any(${organizationIds}::bigint[])`;
  const [count] = await sql<{ total: number }[]>`select count(*) as total from devices d where ${scope} ${filter}`;
  const rows = await sql<DeviceRow[]>`
    select ${deviceColumns(sql)} from devices d join organizations o on o.id = d.organization_id
    where ${scope} ${filter} order by d.id limit ${o.limit} offset ${o.offset}`;
  return { rows, total: count?.total ?? 0 };
}

export async function simCardsOf(sql: Sql, deviceIds: number[]): Promise<SimCardRow[]> {
  if (deviceIds.length === 0) return [];
  return sql<SimCardRow[]>`
    select ${cardColumns(sql)} from sim_cards where device_id = any(${deviceIds}::bigint[]) order by device_id, sim_slot nulls last, id`;
}

export async function findSimCard(sql: Sql, deviceId: number, cardId: number, opts: { forUpdate?: boolean } = {}) {
  const [row] = await sql<SimCardRow[]>`
    select ${cardColumns(sql)} from sim_cards where id = ${cardId} and device_id = ${deviceId} ${opts.forUpdate ? sql`for update` : sql``}`;
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

/** A fresh plain code (reissue): it proves whatever number sends it, so an earlier claim goes. */
export async function setSimCardCode(sql: Sql, cardId: number, code: string, expiresAt: Date) {
  const [row] = await sql<SimCardRow[]>`
    update sim_cards set verification_code = ${code}, code_expires_at = ${expiresAt}, claimed_number = null, updated_at = now()
    where id = ${cardId} returning *`;
  return row!;
}

/** A claim: a fresh code that proves only `number`; the card's number and status stay as they are. */
export async function setSimCardClaim(sql: Sql, cardId: number, number: string, code: string, expiresAt: Date) {
  const [row] = await sql<SimCardRow[]>`
    update sim_cards set verification_code = ${code}, code_expires_at = ${expiresAt}, claimed_number = ${number}, updated_at = now()
    where id = ${cardId} returning *`;
  return row!;
}

/** A proven number: the card is active on it, its code and claim spent. */
export async function activateSimCard(sql: Sql, cardId: number, number: string, hostedSimId: number) {
  await sql`
    update sim_cards set phone_number = ${number}, status = 'active', hosted_sim_id = ${hostedSimId}, missed_heartbeats = 0,
      claimed_number = null, verification_code = null, code_expires_at = null, updated_at = now()
    where id = ${cardId}`;
}

/** The live device whose active SIM card has this number (a number is active on one card at most). */
export async function findActiveCardByNumber(sql: Sql, number: string) {
  const [row] = await sql<{ id: number; device_id: number }[]>`
    select c.id, c.device_id from sim_cards c join devices d on d.id = c.device_id
    where c.phone_number = ${number} and c.status = 'active' and d.status <> 'revoked'`;
  return row ?? null;
}

/** Frees a code whose lifetime is over, so the unique index holds only live codes. */
export async function releaseExpiredCode(sql: Sql, code: string, now: Date) {
  await sql`update sim_cards set verification_code = null, code_expires_at = null where verification_code = ${code} and code_expires_at <= ${now}`;
}

/** Device fields a request may set. The phone number is not one: it follows its cards (devicePhoneNumber). */
export async function updateDeviceFields(sql: Sql, id: number, f: { device_name?: string; app_version?: string }) {
  await sql`
    update devices set device_name = coalesce(${f.device_name ?? null}, device_name),
      app_version = coalesce(${f.app_version ?? null}, app_version), config_version = config_version + 1, updated_at = now()
    where id = ${id}`;
}

/** A card of the device proved its number: the device takes `status` and a new config_version. */
export async function recordDeviceVerified(sql: Sql, id: number, status: DeviceStatus) {
  const [row] = await sql<{ config_version: number }[]>`
    update devices set status = ${status}, config_version = config_version + 1, updated_at = now()
    where id = ${id} returning config_version`;
  return row!.config_version;
}

/** Locks a device that is not revoked, for work that must not race its status; false when it is revoked or gone. */
export async function lockLiveDevice(sql: Sql, id: number): Promise<boolean> {
  const [row] = await sql`select id from devices where id = ${id} and status <> 'revoked' for update`;
  return row !== undefined;
}

export async function setDeviceStatus(sql: Sql, id: number, status: DeviceStatus) {
  await sql`update devices set status = ${status}, config_version = config_version + 1, updated_at = now() where id = ${id}`;
}

export async function bumpConfigVersion(sql: Sql, id: number): Promise<number> {
  const [row] = await sql<{ config_version: number }[]>`
    update devices set config_version = config_version + 1, updated_at = now() where id = ${id} returning config_version`;
  return row!.config_version;
}

/** API.md revoke: the device and its cards go inactive for good (codes and claims spent). Answers the cards retired (retirement.ts `endService`). */
export async function revokeDevice(sql: Sql, id: number) {
  await sql`
    update devices set status = 'revoked', is_online = false, offline_since = null, config_version = config_version + 1, updated_at = now()
    where id = ${id}`;
  return retireSimCards(sql, id, null);
}

/**
 * SIM cards of the device go inactive (all of its live ones when `cardIds` is null), codes and
 * claims spent. `missedAtLeast`: only active cards that have missed that many heartbeats still (a
 * heartbeat that listed them since has reset the count). Answers the cards that moved, with the
 * status they had (`was`).
 */
export async function retireSimCards(sql: Sql, deviceId: number, cardIds: number[] | null, opts: { missedAtLeast?: number } = {}) {
  const which = cardIds === null ? sql`` : sql`and s.id = any(${cardIds}::bigint[])`;
  const missed = opts.missedAtLeast === undefined ? sql`` : sql`and b.status = 'active' and b.missed_heartbeats >= ${opts.missedAtLeast}`;
  return sql<(SimCardRow & { was: SimCardStatus })[]>`
    with b as (select id, status, missed_heartbeats from sim_cards where device_id = ${deviceId} order by id for update)
    update sim_cards s set status = 'inactive', verification_code = null, code_expires_at = null, claimed_number = null,
      missed_heartbeats = 0, updated_at = now()
    from b where s.id = b.id and b.status <> 'inactive' ${which} ${missed}
    returning s.id, s.device_id, s.sim_slot, s.phone_number, s.status, s.signal_strength, s.hosted_sim_id, s.claimed_number,
      s.verification_code, s.code_expires_at, s.created_at, s.updated_at, b.status as was`;
}

export async function moveSimCard(sql: Sql, cardId: number, slot: number | null) {
  await sql`update sim_cards set sim_slot = ${slot}, updated_at = now() where id = ${cardId}`;
}

/**
 * A card that holds the slot: a live one, or an inactive one whose re-verification code is still
 * live (it becomes active in that slot if the code is proven). A new card may take a slot only
 * from an inactive card without a live code.
 */
export async function findCardInSlot(sql: Sql, deviceId: number, slot: number, now: Date) {
  const [row] = await sql<{ id: number }[]>`
    select id from sim_cards where device_id = ${deviceId} and sim_slot = ${slot}
      and (status <> 'inactive' or (verification_code is not null and code_expires_at > ${now}))
    order by status = 'inactive', id limit 1`;
  return row ?? null;
}
