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

/** A SIM's pacing state, locked for the rest of the transaction: one dispatcher per SIM at a time, on any instance. */
export async function lockPacing(tx: Sql, hostedSimId: number) {
  await tx`insert into sim_pacing (hosted_sim_id) values (${hostedSimId}) on conflict do nothing`;
  const [row] = await tx<PacingRow[]>`select next_allowed_at, day, day_count, wake_at from sim_pacing where hosted_sim_id = ${hostedSimId} for update`;
  return toState(row);
}

export async function savePacing(tx: Sql, hostedSimId: number, s: PacingState & { wakeAt: number | null }) {
  const at = (ms: number | null) => (ms === null ? null : new Date(ms));
  await tx`
    update sim_pacing set next_allowed_at = ${at(s.nextAllowedAt)}, day = ${s.day}, day_count = ${s.dayCount}, wake_at = ${at(s.wakeAt)}
    where hosted_sim_id = ${hostedSimId}`;
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

export type WaitingSend = { id: number; organization_id: number; device_id: number; expires_at: Date | null; device_ready: boolean };

/** The oldest device send of a SIM waiting to be handed to its phone, with whether that phone is online and active. */
export async function oldestWaiting(tx: Sql, hostedSimId: number, afterId: number): Promise<WaitingSend | null> {
  const [row] = await tx<WaitingSend[]>`
    select m.id, m.organization_id, m.device_id, m.expires_at, coalesce(d.is_online and d.status = 'active', false) as device_ready
    from messages m left join devices d on d.id = m.device_id
    where m.hosted_sim_id = ${hostedSimId} and m.direction = 'outbound' and m.status = 'queued' and m.device_id is not null
      and m.dispatched_at is null and m.id > ${afterId}
    order by m.id limit 1`;
  return row ?? null;
}

/** Marks a waiting device send handed to its phone at `at`; false when it no longer waits (cancelled meanwhile). */
export async function markDispatched(tx: Sql, messageId: number, at: number) {
  const rows = await tx`
    update messages set dispatched_at = ${new Date(at)}, updated_at = now()
    where id = ${messageId} and status = 'queued' and dispatched_at is null returning 1`;
  return rows.length > 0;
}

/** The SIMs whose sends wait for this device. */
export async function simsWaitingFor(sql: Sql, deviceId: number): Promise<number[]> {
  const rows = await sql<{ hosted_sim_id: number }[]>`
    select distinct hosted_sim_id from messages
    where device_id = ${deviceId} and direction = 'outbound' and status = 'queued' and dispatched_at is null`;
  return rows.map((r) => r.hosted_sim_id);
}

/** The number of `candidates` that last wrote to `to` for the organization (the sticky sender), if any. */
export async function lastSenderTo(sql: Sql, organizationId: number, to: string, candidates: number[]): Promise<number | null> {
  const [row] = await sql<{ hosted_sim_id: number }[]>`
    select hosted_sim_id from messages
    where organization_id = ${organizationId} and direction = 'outbound' and to_number = ${to} and hosted_sim_id = any(${candidates}::bigint[])
    order by id desc limit 1`;
  return row?.hosted_sim_id ?? null;
}
