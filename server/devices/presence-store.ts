import type { Sql } from "../db/client";
import { event } from "../events/catalog";
import { appendEventsFrom } from "../events/log";
import { enqueueJobs } from "../jobs/queue";
import type { HeartbeatMetrics, PresenceSnapshot } from "./actor";
import { type DeviceStatus, OFFLINE_ALERT_STATUSES } from "./transitions";

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

/**
 * The DeviceEvent payload (server/events/payloads.ts) of the row `m` a device update returned,
 * timestamps as JavaScript's toISOString writes them.
 */
const deviceEventJson = (sql: Sql, online: boolean, changedAt: ReturnType<Sql>) => sql`jsonb_build_object(
    'device_id', m.id, 'organization_id', m.organization_id, 'status', m.status, 'is_online', ${online}::boolean,
    'last_seen_at', to_char(m.last_seen_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'changed_at', to_char(${changedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'config_version', m.config_version)`;

export type HeartbeatWrite = { id: number; at: number; m: HeartbeatMetrics };

const rowsOf = (items: HeartbeatWrite[]) =>
  items.map((i) => ({
    id: i.id,
    seen: new Date(i.at).toISOString(),
    battery: i.m.batteryLevel ?? null,
    doze: i.m.doze,
    sig: i.m.signalStrength ?? null,
    cards: i.m.simCards ?? [],
  }));

/**
 * An active SIM card goes inactive after this many heartbeats in a row that listed the device's
 * SIM numbers (`sim_cards[]` with at least one E.164 number) without its number: the SIM was
 * removed or swapped. One odd heartbeat never does it, and a heartbeat that lists no number (no
 * `sim_cards[]`, `[]`, or only numbers the phone could not read: "", national formats) says
 * nothing either way. A card whose claim of a new number (PATCH phone_number) is pending counts as
 * listed when the heartbeat names the claimed number, while the claim's code lives: the phone of a
 * SIM swap lists only the new number, and the card retired before its proof lost the claim (and
 * with it the in-place renumbering).
 */
export const MISSED_HEARTBEATS_TO_INACTIVE = 3;
const E164 = "^\\+[1-9][0-9]{6,14}$";

/** What a heartbeat's write found, plus the active cards that have now missed too many heartbeats. */
export type HeartbeatWriteResult = { wasOnline: boolean; status: DeviceStatus; missingCards: number[] };

/**
 * Writes many heartbeats in one statement (one round trip, its own transaction, committed
 * without waiting for the WAL flush: presence is soft state, and a crash losing the last few
 * milliseconds of heartbeats is harmless).
 *
 * Exactly one writer per offline spell learns that its heartbeat brought the device back: the
 * update sets `online_tx` to its own transaction id only on a row it finds offline. Concurrent
 * writers (and markOffline) are ordered by the row lock, and a writer that waited re-reads the row
 * before its SET runs, so it sees the device already online. Several heartbeats of one device in
 * a batch are one row (the latest wins); only the first of them can be the one that brought it
 * back. Cards, each written at most once and only when something changed: signal strengths
 * (`sim_cards[]` go to the cards with those numbers, `signal_strength` to the device's first card
 * unless `sim_cards[]` named it) and the missed-heartbeat count of active cards (reset when
 * `sim_cards[]` names the card, or the number it claims while the claim's code lives: the SIM
 * swapped in, not yet proven; counted up when it lists numbers but neither). The cards
 * that reached MISSED_HEARTBEATS_TO_INACTIVE come back in `missingCards`; the caller retires them.
 *
 * The cards are reached by index whatever the statistics say: per device (a lateral subquery
 * kept apart by `offset 0`) and by id (`= any(array(...))`). Planned on a freshly filled
 * sim_cards without statistics, the joins read the whole table twice per write otherwise
 * (about 65-70 against 12-15 ms for 100 heartbeats of 100,000 devices, docs/benchmarks.md).
 */
export async function writeHeartbeats(sql: Sql, items: HeartbeatWrite[]): Promise<(HeartbeatWriteResult | null)[]> {
  const latest = new Map<number, HeartbeatWrite>();
  for (const i of items) if ((latest.get(i.id)?.at ?? Number.NEGATIVE_INFINITY) <= i.at) latest.set(i.id, i);
  const rows = await sql<{ id: number; was_online: boolean; status: DeviceStatus; missing: number[] }[]>`
    with v as (
      select * from jsonb_to_recordset(${JSON.stringify(rowsOf([...latest.values()].sort((a, b) => a.id - b.id)))}::text::jsonb)
        as v(id bigint, seen timestamptz, battery int, doze bool, sig int, cards jsonb)),
    moved as (
      update devices d set last_seen_at = greatest(d.last_seen_at, v.seen), is_online = true, offline_since = null, offline_alerted_at = null,
        online_tx = case when d.is_online then d.online_tx else pg_current_xact_id() end,
        -- a write overtaken by a later heartbeat's leaves that one's metrics
        battery_level = case when d.last_seen_at > v.seen then d.battery_level else coalesce(v.battery, d.battery_level) end,
        is_in_doze_mode = case when d.last_seen_at > v.seen then d.is_in_doze_mode else v.doze end
      from v
      where d.id = v.id and d.status <> 'revoked'
      returning d.id, d.online_tx <> pg_current_xact_id() as was_online, d.status, d.organization_id, d.last_seen_at, d.config_version, v.seen),
    -- device.online for the writes that brought a device back, in this statement's transaction (no work for the others)
    came_online as (
      ${appendEventsFrom(sql, event.deviceOnline.type, sql`select m.organization_id, null::bigint, m.id, ${deviceEventJson(sql, true, sql`m.seen`)} from moved m where not m.was_online`)}
      returning 1),
    -- the sends waiting for a device that came back go out (server/messages/pacer.ts)
    resumed as (${enqueueJobs(sql, "message.outbound.device-online", sql`select jsonb_build_object('device_id', m.id) from moved m where not m.was_online`)}),
    live as (
      select c.id, c.device_id, c.phone_number, c.status, c.signal_strength as had, c.missed_heartbeats as missed,
        -- a claim whose code still lives: the phone already lists the new SIM's number (a SIM swap)
        case when c.code_expires_at > v.seen then c.claimed_number end as claimed,
        row_number() over (partition by c.device_id order by c.sim_slot nulls last, c.id) as pos
      from v cross join lateral (select * from sim_cards c where c.device_id = v.id and c.status <> 'inactive' offset 0) c),
    judged as (
      select l.id, l.device_id, l.status,
        coalesce(r.sig, case when l.pos = 1 then v.sig end, l.had) as sig,
        case when l.status <> 'active' or not v.lists_numbers then l.missed
             when r.sig is not null then 0 else l.missed + 1 end as missed
      from live l
      join (select v.*, exists (select 1 from jsonb_array_elements(v.cards) e where e->>'phone_number' ~ ${E164}) as lists_numbers from v) v
        on v.id = l.device_id
      left join lateral (
        select n.signal_strength as sig from jsonb_to_recordset(v.cards) as n(phone_number text, signal_strength int)
        where n.phone_number = l.phone_number or n.phone_number = l.claimed limit 1) r on true),
    cards as (
      update sim_cards s set signal_strength = j.sig, missed_heartbeats = j.missed,
        updated_at = case when s.signal_strength is distinct from j.sig then now() else s.updated_at end
      from judged j where s.id = any(array(select id from judged)) and s.id = j.id and (s.signal_strength is distinct from j.sig or s.missed_heartbeats <> j.missed)
      returning s.id, s.device_id, j.missed, j.status)
    select moved.id, moved.was_online, moved.status,
      array(select c.id from cards c where c.device_id = moved.id and c.status = 'active' and c.missed >= ${MISSED_HEARTBEATS_TO_INACTIVE} order by c.id) as missing
    from moved, lateral (select set_config('synchronous_commit', 'off', true)) as off`;
  const byId = new Map(rows.map((r) => [r.id, { wasOnline: r.was_online, status: r.status, missingCards: r.missing.map(Number) }]));
  const answered = new Set<number>();
  return items.map((i) => {
    const r = byId.get(i.id);
    if (!r) return null;
    if (answered.has(i.id)) return { ...r, wasOnline: true, missingCards: [] };
    answered.add(i.id);
    return r;
  });
}

/**
 * API.md offline rule as one conditional write: only a device still marked online whose last
 * heartbeat (on any instance) is older than its timeout moves, so concurrent callers on several
 * instances produce one transition.
 */
export async function markOffline(sql: Sql, id: number, at: number, timing: { offlineAfterSeconds: number; dozeOfflineAfterSeconds: number }) {
  const now = new Date(at);
  // device.offline is appended by the same statement that wins the transition.
  const moved = await sql<{ id: number }[]>`
    with moved as (
      update devices set is_online = false, offline_since = ${now}, offline_alerted_at = null
      where id = ${id} and is_online and status <> 'revoked'
        and last_seen_at <= ${now}::timestamptz - make_interval(secs => case when is_in_doze_mode then ${timing.dozeOfflineAfterSeconds}::int else ${timing.offlineAfterSeconds}::int end)
      returning id, organization_id, status, last_seen_at, config_version),
    went_offline as (
      ${appendEventsFrom(sql, event.deviceOffline.type, sql`select m.organization_id, null::bigint, m.id, ${deviceEventJson(sql, false, sql`${now}::timestamptz`)} from moved m`)}
      returning 1)
    select id from moved`;
  return { won: moved.length > 0, snapshot: await loadPresence(sql, id) };
}

/** True for the one caller that may send the alert of the offline spell that began at `offlineSince`. */
export async function claimOfflineAlert(sql: Sql, id: number, offlineSince: number, at: number) {
  const rows = await sql<{ id: number }[]>`
    update devices set offline_alerted_at = ${new Date(at)}
    where id = ${id} and not is_online and offline_since = ${new Date(offlineSince)} and offline_alerted_at is null
      and status = any(${OFFLINE_ALERT_STATUSES as DeviceStatus[]}::text[])
    returning id`;
  return rows.length > 0;
}

export async function deviceForAlert(sql: Sql, id: number) {
  const [row] = await sql<{ id: number; organization_id: number; device_name: string | null; android_id: string; last_seen_at: Date | null }[]>`
    select id, organization_id, device_name, android_id, last_seen_at from devices where id = ${id}`;
  return row ?? null;
}
