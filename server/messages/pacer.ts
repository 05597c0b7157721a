import type { Pool, Sql } from "../db/client";
import { appendEvents, type NewEvent } from "../events/log";
import type { EventTail } from "../events/tail";
import { enqueueJobs, type JobQueue } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { applyStatusMoves } from "./outbound";
import { deviceCommand, statusEventsOf } from "./outbound-events";
import { moveStatuses } from "./outbound-store";
import {
  effectivePolicies,
  lockPacings,
  markDispatched,
  type SimPacing,
  savePacings,
  simsWaitingFor,
  untakenByGonePhones,
  type WaitingSend,
  waitingSends,
} from "./policy-store";
import { rerouteStranded } from "./reroute";
import { afterSend, nextSlot, type SendingPolicy } from "./sending-policy";

export type PacerDeps = { sql: Pool; jobs: JobQueue; events: Pick<EventTail, "notify">; clock?: Clock; deviceTimeoutSeconds: number };

/**
 * Waiting sends of a SIM looked at per run at most. A policy's gap is at least 100 ms (600 a
 * minute), so a run hands over at most one send per SIM; the rest are sends that expired while
 * waiting. A SIM with more of those than this goes on in the next run, due at once.
 */
const PER_SIM = 20;

/**
 * The pacer (issue 19 items 4 and 5): hands SIMs' waiting device sends to their phones, oldest
 * first, as fast as each SIM's sending policy allows and only while its phone is online. It
 * runs inside the caller's transaction (a batch of `message.outbound.pace` jobs, a dispatch
 * batch of scheduled sends, a device's return) under the locks of the SIMs' `sim_pacing` rows,
 * so one dispatcher at a time decides for a SIM and the state it leaves (next_allowed_at, the
 * day's count) commits with the `message.send` events it returns: a restart neither bursts nor
 * forgets. Set-based: a fixed number of statements per call, whatever the number of SIMs.
 *
 * Every waiting send has a pace job (or a dispatch) due by the time it may go: the send
 * enqueues one at once (or its scheduled dispatch paces it at send_at), and a run that stops at
 * a pacing slot enqueues the next at that slot (wake_at records it, so idle extra jobs do not
 * multiply). A run that finds the phone offline stops without one: the device's return enqueues
 * `message.outbound.device-online`, which paces its SIMs. Extra jobs find nothing to do.
 *
 * Returns the events to append with the transaction (message.send, message.expired).
 */
export async function paceSimsIn(deps: PacerDeps, tx: Sql, hostedSimIds: number[]): Promise<NewEvent[]> {
  if (hostedSimIds.length === 0) return [];
  const { states, databaseNow } = await lockPacings(tx, hostedSimIds);
  // The queue claims a job once the database's clock or the instance's reaches its time (jobs/queue.ts
  // dueBy): a pace job due at a slot runs at the slot by whichever is ahead, and judges it so too.
  const now = Math.max(deps.clock?.now() ?? Date.now(), databaseNow);
  const waiting = await waitingSends(tx, [...states.keys()], PER_SIM);
  const policies = await effectivePolicies(tx, distinctPairs(waiting));
  const expired: number[] = [];
  const handed: number[] = [];
  const orphaned: WaitingSend[] = [];
  const wakes: { sim: number; at: number }[] = [];
  const stranded: number[] = [];
  const bySim = Map.groupBy(waiting, (w) => w.hosted_sim_id);
  for (const [sim, before] of states) {
    const run = planRun(bySim.get(sim) ?? [], before, (m) => policies.get(`${m.organization_id}:${sim}`)!, now);
    expired.push(...run.expired);
    handed.push(...run.handed);
    orphaned.push(...run.orphaned);
    if (run.wake !== null) wakes.push({ sim, at: run.wake });
    if (run.phoneAway) stranded.push(sim);
    states.set(sim, run.state);
  }
  const events: NewEvent[] = [];
  // The sends handed over are locked before the moves below lock the organizations' usage rows (a
  // refund): a cancel locks its message, then the usage row, and the other order deadlocked with it.
  const pickUpBy = new Date(now + deps.deviceTimeoutSeconds * 1000);
  const sent = await markDispatched(tx, handed, now, (ids) =>
    enqueueJobs(tx, "message.outbound.device-timeout", tx`select jsonb_build_object('message_id', id) from (${ids}) as t`, { runAt: pickUpBy }),
  );
  for (const m of sent) events.push(deviceCommand(m.organization_id, m.device_id, m));
  const gone = await moveStatuses(tx, expired, "expired", ["queued"], { error: "No device picked up the message before it expired." });
  events.push(...(await statusEventsOf(tx, gone)));
  // Sends whose phone will never send them: a sender pool's go to another of its numbers where one
  // can take them; the others fail, and the sends queued behind them go on.
  const orphanPools = await rerouteStranded(tx, { messageIds: orphaned.filter((m) => m.pooled).map((m) => m.id) }, now);
  for (const sim of orphanPools.sims) wakes.push({ sim, at: now });
  const movedAway = new Set(orphanPools.moved);
  const failed = await moveStatuses(
    tx,
    orphaned.filter((m) => !movedAway.has(m.id)).map((m) => m.id),
    "failed",
    ["queued"],
    {
      error: "The phone it was to be sent from no longer serves its number (revoked, its SIM card left service, or the SIM proved another number).",
      neverWentOut: true,
    },
  );
  events.push(...(await statusEventsOf(tx, failed)));
  await savePacings(tx, states);
  // Sends of a sender pool waiting for a phone that is away go to another phone of their pool, paced there.
  const rerouted = await rerouteStranded(tx, { hostedSimIds: stranded }, now);
  for (const sim of rerouted.sims) wakes.push({ sim, at: now });
  if (wakes.length > 0) await enqueueWakes(tx, wakes);
  return events;
}

/**
 * What one run does for one SIM (pure): its waiting sends, oldest first, while its phone is
 * ready: those past expires_at expire, the others go as long as the policy's next slot is now
 * (a send cancelled since it was read is left out by markDispatched; its slot stays used, so
 * pacing errs slow). `wake`: when a pace job must run for the SIM next (null: none needed, or
 * one already due at or before then and still ahead of now covers it, as wake_at records).
 */
function planRun(sends: WaitingSend[], before: SimPacing, policyOf: (m: WaitingSend) => SendingPolicy, now: number) {
  const expired: number[] = [];
  const handed: number[] = [];
  const orphaned: WaitingSend[] = [];
  let state = before;
  let wake: number | null = null;
  let looked = 0;
  let phoneAway = false;
  for (const m of sends) {
    if (m.device_gone) {
      looked++;
      orphaned.push(m);
      continue;
    }
    if (!m.device_ready) {
      phoneAway = true;
      break;
    }
    looked++;
    if (m.expires_at && m.expires_at.getTime() <= now) {
      expired.push(m.id);
      continue;
    }
    const policy = policyOf(m);
    const slot = nextSlot(policy, state, now);
    if (slot > now) {
      wake = slot;
      break;
    }
    handed.push(m.id);
    state = { ...afterSend(policy, state, now), wakeAt: state.wakeAt };
  }
  // Every send looked at ended (expired or went): more may wait behind them, due at once.
  if (wake === null && looked === PER_SIM) wake = now;
  if (wake !== null && state.wakeAt !== null && state.wakeAt > now && state.wakeAt <= wake) wake = null;
  if (wake !== null) state = { ...state, wakeAt: wake };
  return { expired, handed, orphaned, state, wake, phoneAway };
}

/**
 * Something changed that these SIMs' device sends depend on (their cards left service, the device
 * was revoked, the SIM proved another number). Sends handed to a phone that will now never send
 * them and that it had not taken up end `failed` at once, the phone told not to send them (its
 * quota unit kept, as when the pick-up timeout ends one: the phone had it); and a pace job for
 * each SIM, due at once, decides what becomes of the sends still waiting (handed over, failed,
 * or moved within their sender pool). Sends the phone took up (`sending`, `sent`) are left to
 * its reports, which a revoked phone may still make on them (devices/transitions.ts).
 */
export async function reconsiderSends(tx: Sql, hostedSimIds: number[]) {
  const ids = [...new Set(hostedSimIds)];
  if (ids.length === 0) return;
  const error =
    "The phone it was handed to no longer serves its number (revoked, its SIM card left service, or the SIM proved another number) and had not taken it up.";
  await applyStatusMoves(tx, [{ ids: await untakenByGonePhones(tx, ids), to: "failed", from: ["queued"], extra: { error }, callOff: true }]);
  await enqueueJobs(tx, "message.outbound.pace", tx`select jsonb_build_object('hosted_sim_id', id) from unnest(${ids}::bigint[]) as t(id)`);
}

/** The pace jobs of SIMs at their next slots, one statement for all. */
const enqueueWakes = (tx: Sql, wakes: { sim: number; at: number }[]) =>
  enqueueJobs(
    tx,
    "message.outbound.pace",
    tx`select jsonb_build_object('hosted_sim_id', w.sim), w.at
       from unnest(${wakes.map((w) => w.sim)}::bigint[], ${wakes.map((w) => new Date(w.at).toISOString())}::timestamptz[]) as w(sim, at)`,
    { runAt: "per-row" },
  );

const distinctPairs = (sends: WaitingSend[]) => {
  const seen = new Map<string, { organizationId: number; hostedSimId: number }>();
  for (const s of sends) seen.set(`${s.organization_id}:${s.hosted_sim_id}`, { organizationId: s.organization_id, hostedSimId: s.hosted_sim_id });
  return [...seen.values()];
};

/** paceSimsIn in a transaction of its own; wakes the queue and the event readers when it handed anything over. */
export async function paceSims(deps: PacerDeps, hostedSimIds: number[]) {
  if (hostedSimIds.length === 0) return;
  const events = await deps.sql.begin(async (tx) => {
    const events = await paceSimsIn(deps, tx, hostedSimIds);
    await appendEvents(tx, events);
    return events;
  });
  if (events.length > 0) {
    deps.jobs.wake();
    deps.events.notify();
  }
}

/**
 * Devices came back online (each one's heartbeat write enqueued a job): their SIMs' waiting sends
 * go out, paced, in one transaction for the batch. A fleet that reconnects at once (after a
 * network outage, a restart) is a few statements per batch rather than per device.
 */
export async function resumeDevices(deps: PacerDeps, deviceIds: number[]) {
  if (deviceIds.length === 0) return;
  await paceSims(deps, await simsWaitingFor(deps.sql, deviceIds));
}
