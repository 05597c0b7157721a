import type { Sql } from "../db/client";
import { byosDeviceOf, findHostedSim, lockedByOther } from "../numbers/store";
import { effectivePolicy, lastSendersTo, pacingLoads } from "./policy-store";
import { sentToday } from "./sending-policy";

type Stranded = { id: number; organization_id: number; to: string; sender_pool: number[] };
type Target = { id: number; number: string; deviceId: number; simSlot: number | null; cap: number; load: number };

/** Sends moved per pacer run at most; more move on the next run. */
const MAX_MOVED = 500;

/**
 * Routing to a healthy phone after acceptance (issue 19 item 5; docs/sending.md "Sender pools"):
 * the sends accepted through a sender pool that still wait on a phone the pacer found offline, or
 * gone for good, move to another number of their pool whose phone is online and
 * whose SIM is under its daily cap: the pool's number that last wrote to the recipient when it is
 * one of those (sticky sender), else the least loaded, counting the sends moved to it. Only BYOS
 * numbers the organization may still send from, not locked by another organization, take them.
 * `which`: the sends waiting on these SIMs, or these sends (whose phone is gone for good). Runs in
 * the pacer's transaction; returns the SIMs that received sends (their pacer must run) and the
 * sends moved.
 */
export async function rerouteStranded(
  tx: Sql,
  which: { hostedSimIds: number[] } | { messageIds: number[] },
  now: number,
): Promise<{ sims: number[]; moved: number[] }> {
  const [column, keys] = "hostedSimIds" in which ? ["hosted_sim_id", which.hostedSimIds] : ["id", which.messageIds];
  if (keys.length === 0) return { sims: [], moved: [] };
  const stranded = await tx<Stranded[]>`
    select id, organization_id, to_number as "to", sender_pool from messages
    where ${tx(column)} = any(${keys}::bigint[]) and direction = 'outbound' and status = 'queued'
      and device_id is not null and dispatched_at is null and sender_pool is not null
    order by id limit ${MAX_MOVED}`;
  const moves = new Map<number, { target: Target; ids: number[] }>();
  for (const group of Map.groupBy(stranded, (s) => `${s.organization_id}:${s.sender_pool.join(",")}`).values()) {
    const org = group[0]!.organization_id;
    const targets = await healthyTargets(tx, org, group[0]!.sender_pool.map(Number), now);
    if (targets.length === 0) continue;
    const sticky = await lastSendersTo(
      tx,
      org,
      group.map((s) => s.to),
      targets.map((t) => t.id),
    );
    for (const s of group) {
      const room = targets.filter((t) => t.load < t.cap);
      const stuck = room.find((t) => t.id === sticky.get(s.to));
      const target = stuck ?? room.reduce<Target | null>((a, b) => (a === null || b.load < a.load ? b : a), null);
      if (!target) break;
      target.load++;
      const move = moves.get(target.id) ?? { target, ids: [] };
      move.ids.push(s.id);
      moves.set(target.id, move);
    }
  }
  for (const { target, ids } of moves.values()) await moveSends(tx, target, ids);
  return { sims: [...moves.keys()], moved: [...moves.values()].flatMap((m) => m.ids) };
}

/** The numbers of a pool that can take sends now: active BYOS, visible to the organization, not locked by another, phone online, under the daily cap. */
async function healthyTargets(tx: Sql, organizationId: number, pool: number[], now: number): Promise<Target[]> {
  const loads = await pacingLoads(tx, pool);
  const targets: Target[] = [];
  for (const id of pool) {
    const sim = await findHostedSim(tx, [organizationId], id);
    if (sim?.status !== "active" || sim.provider !== "byos") continue;
    if (lockedByOther(sim, organizationId)) continue;
    const device = await byosDeviceOf(tx, id);
    if (device?.device_status !== "active" || !device.is_online) continue;
    const { policy } = await effectivePolicy(tx, organizationId, id);
    const l = loads.get(id);
    const load = (l ? sentToday(policy, l.state, now) : 0) + (l?.waiting ?? 0);
    if (load < policy.dailyCap) targets.push({ id, number: sim.number, deviceId: device.device_id, simSlot: device.sim_slot, cap: policy.dailyCap, load });
  }
  return targets;
}

/**
 * Moves waiting sends to another number, with their visibility rows: the old row is removed and
 * a new one inserted on the new number (the history triggers count both and give it the new
 * number's next seq), so each number's history shows the send where it goes out.
 */
async function moveSends(tx: Sql, t: Target, ids: number[]) {
  await tx`
    with moved as (
      update messages set hosted_sim_id = ${t.id}, number = ${t.number}, from_number = ${t.number}, device_id = ${t.deviceId},
        sim_slot = ${t.simSlot}, updated_at = now()
      where id = any(${ids}::bigint[]) and status = 'queued' and dispatched_at is null and device_id is not null
      returning id),
    gone as (
      delete from message_visibility v using moved where v.message_id = moved.id
      returning v.organization_id, v.message_id, v.team_id)
    insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id, outbound)
    select organization_id, ${t.id}, message_id, team_id, true from gone order by message_id`;
}
