import type { Caller } from "../auth/caller";
import type { Pool } from "../db/client";
import { invalidState } from "../errors";
import { requireNumber } from "../numbers/locks";
import { byosDeviceOf, type HostedSimRow } from "../numbers/store";
import { effectivePolicy, lastSenderTo, pacingLoads } from "./policy-store";
import { sentToday } from "./sending-policy";

type Candidate = { sim: HostedSimRow; online: boolean; underCap: boolean; load: number };

/**
 * The number of a sender pool (`hosted_sims`) a send to `to` goes from (docs/sending.md "Sender
 * pools"): the one that last wrote to `to` (sticky sender, so a conversation keeps one number)
 * when its phone is online and its SIM under its daily cap; else the healthy one with the least
 * load (sent today plus waiting); else, none being healthy, the sticky one or the least loaded,
 * where the send waits for its phone or its next day. Every id must be a number the caller's
 * organization may send from (404 otherwise, as for `hosted_sim`); pool numbers (provider) are
 * always healthy.
 */
export async function chooseSender(sql: Pool, c: Caller, ids: number[], to: string, now: number): Promise<HostedSimRow> {
  const sims: HostedSimRow[] = [];
  for (const id of ids) sims.push(await requireNumber(sql, c, id));
  const active = sims.filter((s) => s.status === "active");
  if (active.length === 0) throw invalidState("No number of this sender pool is active.");
  const loads = await pacingLoads(
    sql,
    active.map((s) => s.id),
  );
  const candidates: Candidate[] = [];
  for (const sim of active) {
    if (sim.provider !== "byos") {
      candidates.push({ sim, online: true, underCap: true, load: 0 });
      continue;
    }
    const device = await byosDeviceOf(sql, sim.id);
    if (device?.device_status !== "active") continue;
    const { policy } = await effectivePolicy(sql, c.organization.id, sim.id);
    const l = loads.get(sim.id);
    const load = (l ? sentToday(policy, l.state, now) : 0) + (l?.waiting ?? 0);
    candidates.push({ sim, online: device.is_online, underCap: load < policy.dailyCap, load });
  }
  if (candidates.length === 0) throw invalidState("No active device holds a number of this sender pool right now.");
  const sticky = await lastSenderTo(
    sql,
    c.organization.id,
    to,
    candidates.map((x) => x.sim.id),
  );
  const healthy = candidates.filter((x) => x.online && x.underCap);
  const stickyOne = candidates.find((x) => x.sim.id === sticky);
  if (stickyOne && healthy.includes(stickyOne)) return stickyOne.sim;
  const pick = (xs: Candidate[]) => xs.reduce((a, b) => (b.load < a.load ? b : a)).sim;
  if (healthy.length > 0) return pick(healthy);
  return stickyOne?.sim ?? pick(candidates);
}
