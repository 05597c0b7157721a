import type { Sql } from "../db/client";
import type { HeartbeatMetrics, PresenceSnapshot } from "./actor";
import type { DeviceStatus } from "./transitions";

type PresenceRow = {
  id: number;
  organization_id: number;
  status: DeviceStatus;
  is_online: boolean;
  is_in_doze_mode: boolean;
  last_seen_at: Date | null;
  offline_since: Date | null;
  alert_owed: boolean;
};

const presenceColumns = (sql: Sql) => sql`
  id, organization_id, status, is_online, is_in_doze_mode, last_seen_at, offline_since,
  (not is_online and offline_since is not null and offline_alerted_at is null) as alert_owed`;

const toSnapshot = (r: PresenceRow): PresenceSnapshot => ({
  id: r.id,
  organizationId: r.organization_id,
  status: r.status,
  isOnline: r.is_online,
  doze: r.is_in_doze_mode,
  lastSeenAt: r.last_seen_at ? r.last_seen_at.getTime() : null,
  offlineSince: r.offline_since ? r.offline_since.getTime() : null,
  alertOwed: r.alert_owed,
});

export async function loadPresence(sql: Sql, id: number): Promise<PresenceSnapshot | null> {
  const [row] = await sql<PresenceRow[]>`select ${presenceColumns(sql)} from devices where id = ${id}`;
  return row ? toSnapshot(row) : null;
}

/** Devices with a presence deadline pending: the ones an instance rebuilds actors for at start. */
export async function loadPendingPresence(sql: Sql): Promise<PresenceSnapshot[]> {
  const rows = await sql<PresenceRow[]>`
    select ${presenceColumns(sql)} from devices
    where status <> 'revoked' and (is_online or (offline_since is not null and offline_alerted_at is null))`;
  return rows.map(toSnapshot);
}

export type HeartbeatWrite = { id: number; at: number; m: HeartbeatMetrics };

const rowsOf = (items: HeartbeatWrite[]) =>
  items.map((i) => ({ id: i.id, seen: new Date(i.at).toISOString(), battery: i.m.batteryLevel ?? null, doze: i.m.doze }));

/**
 * Writes many heartbeats in one statement. The row lock taken by `prior ... for update` orders
 * it against markOffline, and `prior.is_online` is the value this write replaced: false means
 * this heartbeat brought the device back (exactly one writer sees that per offline spell).
 */
export async function writeHeartbeats(sql: Sql, items: HeartbeatWrite[]) {
  const rows = await sql<{ id: number; was_online: boolean; status: DeviceStatus }[]>`
    with v as (
      select * from jsonb_to_recordset(${JSON.stringify(rowsOf(items))}::text::jsonb) as v(id bigint, seen timestamptz, battery int, doze bool)),
    prior as (select d.id, d.is_online from devices d join v on v.id = d.id where d.status <> 'revoked' for update of d)
    update devices d set last_seen_at = greatest(d.last_seen_at, v.seen), battery_level = coalesce(v.battery, d.battery_level),
      is_in_doze_mode = v.doze, is_online = true, offline_since = null, offline_alerted_at = null
    from v join prior on prior.id = v.id
    where d.id = v.id
    returning d.id, prior.is_online as was_online, d.status`;
  await writeSignalStrengths(sql, items);
  const byId = new Map(rows.map((r) => [r.id, { wasOnline: r.was_online, status: r.status }]));
  return items.map((i) => byId.get(i.id) ?? null);
}

/** `signal_strength` goes to the device's first SIM card, `sim_cards[]` to the cards with those numbers. */
async function writeSignalStrengths(sql: Sql, items: HeartbeatWrite[]) {
  const first = items.filter((i) => i.m.signalStrength !== undefined);
  if (first.length > 0) {
    await sql`
      update sim_cards s set signal_strength = v.sig, updated_at = now()
      from unnest(${first.map((i) => i.id)}::bigint[], ${first.map((i) => i.m.signalStrength!)}::int[]) as v(device_id, sig)
      where s.id = (select c.id from sim_cards c where c.device_id = v.device_id and c.status <> 'inactive'
                    order by c.sim_slot nulls last, c.id limit 1)`;
  }
  const perCard = items.flatMap((i) => (i.m.simCards ?? []).map((c) => ({ id: i.id, phone: c.phone_number, sig: c.signal_strength })));
  if (perCard.length > 0) {
    await sql`
      update sim_cards s set signal_strength = v.sig, updated_at = now()
      from unnest(${perCard.map((c) => c.id)}::bigint[], ${perCard.map((c) => c.phone)}::text[], ${perCard.map((c) => c.sig)}::int[])
        as v(device_id, phone, sig)
      where s.device_id = v.device_id and s.phone_number = v.phone and s.status <> 'inactive'`;
  }
}

/**
 * API.md offline rule as one conditional write: only a device still marked online whose last
 * heartbeat (on any instance) is older than its timeout moves, so concurrent callers on several
 * instances produce one transition.
 */
export async function markOffline(sql: Sql, id: number, at: number, timing: { offlineAfterSeconds: number; dozeOfflineAfterSeconds: number }) {
  const now = new Date(at);
  const moved = await sql<{ id: number }[]>`
    update devices set is_online = false, offline_since = ${now}, offline_alerted_at = null
    where id = ${id} and is_online and status <> 'revoked'
      and last_seen_at <= ${now}::timestamptz - make_interval(secs => case when is_in_doze_mode then ${timing.dozeOfflineAfterSeconds}::int else ${timing.offlineAfterSeconds}::int end)
    returning id`;
  return { won: moved.length > 0, snapshot: await loadPresence(sql, id) };
}

/** True for the one caller that may send the alert of the offline spell that began at `offlineSince`. */
export async function claimOfflineAlert(sql: Sql, id: number, offlineSince: number, at: number) {
  const rows = await sql<{ id: number }[]>`
    update devices set offline_alerted_at = ${new Date(at)}
    where id = ${id} and not is_online and offline_since = ${new Date(offlineSince)} and offline_alerted_at is null
      and status in ('active', 'pending_verification')
    returning id`;
  return rows.length > 0;
}

export async function deviceForAlert(sql: Sql, id: number) {
  const [row] = await sql<{ id: number; organization_id: number; device_name: string | null; android_id: string; last_seen_at: Date | null }[]>`
    select id, organization_id, device_name, android_id, last_seen_at from devices where id = ${id}`;
  return row ?? null;
}
