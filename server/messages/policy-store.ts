import type postgres from "postgres";
import type { Sql } from "../db/client";
import { DEFAULT_POLICY, type PacingState, type SendingPolicy } from "./sending-policy";

type PolicyRow = {
  messages_per_minute: number;
  min_delay_ms: number;
  max_delay_ms: number;
  daily_cap: number;
  quiet_start: number | null;
  quiet_end: number | null;
  time_zone: string;
  hosted_sim_id: number | null;
};

const toPolicy = (r: PolicyRow): SendingPolicy => ({
  messagesPerMinute: r.messages_per_minute,
  minDelayMs: r.min_delay_ms,
  maxDelayMs: r.max_delay_ms,
  dailyCap: r.daily_cap,
  quiet: r.quiet_start === null || r.quiet_end === null ? null : { start: r.quiet_start, end: r.quiet_end },
  timeZone: r.time_zone,
});

export type PolicySource = "number" | "organization" | "default";

/**
 * The policy that governs an organization's sends from a number: the number's own, else the
 * organization's default, else DEFAULT_POLICY. `hostedSimId` null: the organization's default.
 */
export async function effectivePolicy(sql: Sql, organizationId: number, hostedSimId: number | null): Promise<{ policy: SendingPolicy; source: PolicySource }> {
  const rows = await sql<PolicyRow[]>`
    select messages_per_minute, min_delay_ms, max_delay_ms, daily_cap, quiet_start, quiet_end, time_zone, hosted_sim_id
    from sending_policies
    where organization_id = ${organizationId} and (hosted_sim_id is null or hosted_sim_id = ${hostedSimId ?? 0})
    order by hosted_sim_id nulls last limit 1`;
  const row = rows[0];
  if (!row) return { policy: DEFAULT_POLICY, source: "default" };
  return { policy: toPolicy(row), source: row.hosted_sim_id === null ? "organization" : "number" };
}

/** Sets the organization's default (`hostedSimId` null) or a number's own policy. */
export async function savePolicy(sql: Sql, organizationId: number, hostedSimId: number | null, p: SendingPolicy) {
  await sql`
    insert into sending_policies (organization_id, hosted_sim_id, messages_per_minute, min_delay_ms, max_delay_ms, daily_cap, quiet_start, quiet_end, time_zone)
    values (${organizationId}, ${hostedSimId}, ${p.messagesPerMinute}, ${p.minDelayMs}, ${p.maxDelayMs}, ${p.dailyCap},
            ${p.quiet?.start ?? null}, ${p.quiet?.end ?? null}, ${p.timeZone})
    on conflict (organization_id, coalesce(hosted_sim_id, 0)) do update set
      messages_per_minute = excluded.messages_per_minute, min_delay_ms = excluded.min_delay_ms, max_delay_ms = excluded.max_delay_ms,
      daily_cap = excluded.daily_cap, quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end, time_zone = excluded.time_zone,
      updated_at = now()`;
}

/** Removes a number's own policy (its sends follow the organization's default again). */
export async function deletePolicy(sql: Sql, organizationId: number, hostedSimId: number) {
  await sql`delete from sending_policies where organization_id = ${organizationId} and hosted_sim_id = ${hostedSimId}`;
}

type PacingRow = { next_allowed_at: Date | null; day: string | null; day_count: number; wake_at: Date | null };
const toState = (r: PacingRow | undefined): PacingState & { wakeAt: number | null } => ({
  nextAllowedAt: r?.next_allowed_at?.getTime() ?? null,
  day: r?.day ?? null,
  dayCount: r?.day_count ?? 0,
  wakeAt: r?.wake_at?.getTime() ?? null,
});

export type SimPacing = PacingState & { wakeAt: number | null };

/**
 * SIMs' pacing states, locked for the rest of the transaction (in id order, so two dispatchers
 * of overlapping SIMs never deadlock): one dispatcher per SIM at a time, on any instance. With
 * the database's time of the transaction, which the job queue also claims by (jobs/queue.ts).
 */
export async function lockPacings(tx: Sql, hostedSimIds: number[]): Promise<{ states: Map<number, SimPacing>; databaseNow: number }> {
  const ids = [...new Set(hostedSimIds)].sort((a, b) => a - b);
  await tx`insert into sim_pacing (hosted_sim_id) select unnest(${ids}::bigint[]) order by 1 on conflict do nothing`;
  const rows = await tx<(PacingRow & { hosted_sim_id: number; database_now: Date })[]>`
    select hosted_sim_id, next_allowed_at, day, day_count, wake_at, now() as database_now from sim_pacing where hosted_sim_id = any(${ids}::bigint[])
    order by hosted_sim_id for update`;
  return { states: new Map(rows.map((r) => [r.hosted_sim_id, toState(r)])), databaseNow: rows[0]?.database_now.getTime() ?? 0 };
}

/** Stores the pacing states the dispatcher left (one statement for every SIM). */
export async function savePacings(tx: Sql, states: Map<number, SimPacing>) {
  if (states.size === 0) return;
  const at = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const rows = [...states].map(([id, s]) => ({ id, next: at(s.nextAllowedAt), day: s.day, count: s.dayCount, wake: at(s.wakeAt) }));
  await tx`
    update sim_pacing p set next_allowed_at = r.next, day = r.day, day_count = r.count, wake_at = r.wake
    from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as r(id bigint, next timestamptz, day text, count int, wake timestamptz)
    where p.hosted_sim_id = r.id`;
}

/** Pacing states of several SIMs, unlocked (a sender pool's choice), with how many sends wait on each. */
export async function pacingLoads(sql: Sql, hostedSimIds: number[]) {
  const rows = await sql<(PacingRow & { hosted_sim_id: number; waiting: number })[]>`
    select s.id as hosted_sim_id, p.next_allowed_at, p.day, coalesce(p.day_count, 0) as day_count, p.wake_at,
      (select count(*) from messages m where m.hosted_sim_id = s.id and m.direction = 'outbound' and m.status = 'queued'
         and m.device_id is not null and m.dispatched_at is null)::int as waiting
    from unnest(${hostedSimIds}::bigint[]) as s(id) left join sim_pacing p on p.hosted_sim_id = s.id`;
  return new Map(rows.map((r) => [r.hosted_sim_id, { state: toState(r), waiting: r.waiting }]));
}

export type WaitingSend = {
  id: number;
  hosted_sim_id: number;
  organization_id: number;
  device_id: number;
  expires_at: Date | null;
  /** Online and active: the send may go now. */
  device_ready: boolean;
  /**
   * The phone will never send it: revoked, or it no longer holds an active card of the number (the
   * card left service), or the number is no longer the SIM's (a card proved another number in its
   * place: the phone would send it from a number the send does not name).
   */
  device_gone: boolean;
  /** Accepted through a sender pool: another number of the pool may take it (reroute.ts). */
  pooled: boolean;
};

/**
 * The oldest device sends of each SIM waiting to be handed to its phone (at most `perSim` each,
 * oldest first, by the waiting index), with whether that phone is online and active, or gone.
 */
export async function waitingSends(tx: Sql, hostedSimIds: number[], perSim: number): Promise<WaitingSend[]> {
  return tx<WaitingSend[]>`
    select w.* from unnest(${hostedSimIds}::bigint[]) as s(id) cross join lateral (
      select m.id, m.hosted_sim_id, m.organization_id, m.device_id, m.expires_at, coalesce(d.is_online and d.status = 'active', false) as device_ready,
        ${deviceGone(tx)} as device_gone,
        m.sender_pool is not null as pooled
      from messages m left join devices d on d.id = m.device_id left join hosted_sims h on h.id = m.hosted_sim_id
      where m.hosted_sim_id = s.id and m.direction = 'outbound' and m.status = 'queued' and m.device_id is not null and m.dispatched_at is null
      order by m.id limit ${perSim}) w
    order by w.hosted_sim_id, w.id`;
}

/**
 * WaitingSend's `device_gone` of a send `m`, with its device `d` and hosted SIM `h` joined (left
 * joins): the phone will never send it.
 */
const deviceGone = (tx: Sql) => tx`(
  coalesce(d.status = 'revoked', true) or not exists (
    select 1 from sim_cards c where c.device_id = m.device_id and c.hosted_sim_id = m.hosted_sim_id and c.status = 'active')
  or h.number is distinct from m.number)`;

/**
 * Sends of these SIMs handed to their phone (message.send) that it has not taken up (still
 * `queued`) and never will: their phone is gone, as WaitingSend's `device_gone` judges.
 */
export async function untakenByGonePhones(tx: Sql, hostedSimIds: number[]): Promise<number[]> {
  const rows = await tx<{ id: number }[]>`
    select m.id from messages m left join devices d on d.id = m.device_id left join hosted_sims h on h.id = m.hosted_sim_id
    where m.hosted_sim_id = any(${hostedSimIds}::bigint[]) and m.direction = 'outbound' and m.status = 'queued'
      and m.device_id is not null and m.dispatched_at is not null and ${deviceGone(tx)}
    order by m.id`;
  return rows.map((r) => r.id);
}

/**
 * Marks waiting device sends handed to their phone at `at`, returning what their `message.send`
 * carries; a send no longer waiting (cancelled meanwhile) is left out. Each takes the slot its
 * number's card is in now: the card may have moved to another slot since the send was accepted,
 * and the phone sends from the slot it is given. Sends without expires_at
 * get their pick-up timeout job here (OUTBOUND_DEVICE_TIMEOUT_SECONDS from now): those with one
 * already have it at expires_at, from when they started waiting.
 */
export async function markDispatched(tx: Sql, messageIds: number[], at: number, timeouts: (ids: postgres.Fragment) => postgres.Fragment) {
  if (messageIds.length === 0) return [];
  return tx<
    { id: number; organization_id: number; device_id: number; hosted_sim_id: number; number: string; to: string; text: string; sim_slot: number | null }[]
  >`
    with handed as (
      update messages m set dispatched_at = ${new Date(at)}, updated_at = now(), sim_slot = coalesce((
          select c.sim_slot from sim_cards c where c.device_id = m.device_id and c.hosted_sim_id = m.hosted_sim_id and c.status = 'active'
          order by c.id limit 1), m.sim_slot)
      where id = any(${messageIds}::bigint[]) and status = 'queued' and dispatched_at is null
      returning id, organization_id, device_id, hosted_sim_id, number, to_number as "to", text, sim_slot, expires_at),
    timeouts as (${timeouts(tx`select id from handed where expires_at is null`)})
    select id, organization_id, device_id, hosted_sim_id, number, "to", text, sim_slot from handed order by id`;
}

/**
 * The policies of several (organization, SIM) pairs in one query: each the number's own, else
 * the organization's default, else DEFAULT_POLICY (as effectivePolicy). Keyed `org:sim`.
 */
export async function effectivePolicies(sql: Sql, pairs: { organizationId: number; hostedSimId: number }[]): Promise<Map<string, SendingPolicy>> {
  const out = new Map<string, SendingPolicy>();
  if (pairs.length === 0) return out;
  const rows = await sql<(PolicyRow & { org: number; sim: number })[]>`
    select distinct on (q.org, q.sim) q.org, q.sim, p.messages_per_minute, p.min_delay_ms, p.max_delay_ms, p.daily_cap,
      p.quiet_start, p.quiet_end, p.time_zone, p.hosted_sim_id
    from unnest(${pairs.map((p) => p.organizationId)}::bigint[], ${pairs.map((p) => p.hostedSimId)}::bigint[]) as q(org, sim)
    left join sending_policies p on p.organization_id = q.org and (p.hosted_sim_id is null or p.hosted_sim_id = q.sim)
    order by q.org, q.sim, p.hosted_sim_id nulls last`;
  for (const r of rows) out.set(`${r.org}:${r.sim}`, r.messages_per_minute === null ? DEFAULT_POLICY : toPolicy(r));
  return out;
}

/** The SIMs whose sends wait for any of these devices. */
export async function simsWaitingFor(sql: Sql, deviceIds: number[]): Promise<number[]> {
  const rows = await sql<{ hosted_sim_id: number }[]>`
    select distinct hosted_sim_id from messages
    where device_id = any(${deviceIds}::bigint[]) and direction = 'outbound' and status = 'queued' and dispatched_at is null`;
  return rows.map((r) => r.hosted_sim_id);
}

/** For each recipient, the number of `candidates` that last wrote to it for the organization (the sticky sender), if any. */
export async function lastSendersTo(sql: Sql, organizationId: number, recipients: string[], candidates: number[]): Promise<Map<string, number>> {
  const rows = await sql<{ to_number: string; hosted_sim_id: number }[]>`
    select r.to_number, l.hosted_sim_id from unnest(${recipients}::text[]) as r(to_number)
    cross join lateral (
      select hosted_sim_id from messages
      where organization_id = ${organizationId} and direction = 'outbound' and to_number = r.to_number and hosted_sim_id = any(${candidates}::bigint[])
      order by id desc limit 1) l`;
  return new Map(rows.map((r) => [r.to_number, r.hosted_sim_id]));
}
