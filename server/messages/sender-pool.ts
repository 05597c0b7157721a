import type { Caller } from "../auth/caller";
import type { Pool } from "../db/client";
import { invalidState } from "../errors";
import { numberLocked, requireNumber } from "../numbers/locks";
import { byosDeviceOf, type HostedSimRow, lockedByOther } from "../numbers/store";
import { effectivePolicy, lastSendersTo, pacingLoads } from "./policy-store";
import { sentToday } from "./sending-policy";

type Candidate = { sim: HostedSimRow; online: boolean; cap: number; load: number };

const healthy = (x: Candidate) => x.online && x.load < x.cap;
const leastLoaded = (xs: Candidate[]) => xs.reduce((a, b) => (b.load < a.load ? b : a));

/**
 * The number of a sender pool (`hosted_sims`) each recipient's send goes from (docs/sending.md
 * "Sender pools"): the one that last wrote to that recipient (sticky sender, so a conversation
 * keeps one number) when its phone is online and its SIM under its daily cap; else the healthy
 * one with the least load (sent today plus waiting, counting the sends of this request already
 * given to it, so a bulk send spreads over the pool and no SIM is given more than its cap while
 * another has room); else, none being healthy, the sticky one or the least loaded, where the
 * send waits for its phone or its next day. Every id must be a number the caller's organization
 * may send from (404 otherwise, as for `hosted_sim`); pool numbers (provider) are always healthy.
 * Returns one number per recipient, in the order given.
 */
export async function chooseSenders(sql: Pool, c: Caller, ids: number[], recipients: string[], now: number): Promise<HostedSimRow[]> {
  const candidates = await poolCandidates(sql, c, ids, now);
  const sticky = await lastSendersTo(
    sql,
    c.organization.id,
    recipients,
    candidates.map((x) => x.sim.id),
  );
  return recipients.map((to) => {
    const stuck = candidates.find((x) => x.sim.id === sticky.get(to));
    const fit = candidates.filter(healthy);
    const chosen = stuck && healthy(stuck) ? stuck : fit.length > 0 ? leastLoaded(fit) : (stuck ?? leastLoaded(candidates));
    chosen.load++;
    return chosen.sim;
  });
}

/**
 * The pool's numbers that can take a send now or later: active, not locked by another
 * organization, and for BYOS held by an active device; with their health and load.
 */
async function poolCandidates(sql: Pool, c: Caller, ids: number[], now: number): Promise<Candidate[]> {
  const sims: HostedSimRow[] = [];
  for (const id of ids) sims.push(await requireNumber(sql, c, id));
  const active = sims.filter((s) => s.status === "active");
  if (active.length === 0) throw invalidState("No number of this sender pool is active.");
  // Another organization's lock keeps the pool off that number, as it keeps a send from it off (409).
  const free = active.filter((s) => !lockedByOther(s, c.organization.id));
  if (free.length === 0) throw numberLocked(active.map((s) => s.locked_until).sort()[0] ?? null);
  const loads = await pacingLoads(
    sql,
    free.map((s) => s.id),
  );
  const candidates: Candidate[] = [];
  for (const sim of free) {
    if (sim.provider !== "byos") {
      candidates.push({ sim, online: true, cap: Number.POSITIVE_INFINITY, load: 0 });
      continue;
    }
    const device = await byosDeviceOf(sql, sim.id);
    if (device?.device_status !== "active") continue;
    const { policy } = await effectivePolicy(sql, c.organization.id, sim.id);
    const l = loads.get(sim.id);
    candidates.push({ sim, online: device.is_online, cap: policy.dailyCap, load: (l ? sentToday(policy, l.state, now) : 0) + (l?.waiting ?? 0) });
  }
  if (candidates.length === 0) throw invalidState("No active device holds a number of this sender pool right now.");
  return candidates;
}
