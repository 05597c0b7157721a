import type { Pool, Sql } from "../db/client";
import { appendEvents, type NewEvent } from "../events/log";
import type { EventTail } from "../events/tail";
import type { JobQueue } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { findVisibleMessage } from "./history-store";
import { deviceCommand, deviceDeadline, statusEvents } from "./outbound";
import { moveStatus } from "./outbound-store";
import { effectivePolicy, lockPacing, markDispatched, oldestWaiting, savePacing, simsWaitingFor } from "./policy-store";
import { afterSend, nextSlot, type SendingPolicy } from "./sending-policy";

export type PacerDeps = { sql: Pool; jobs: JobQueue; events: Pick<EventTail, "notify">; clock?: Clock; deviceTimeoutSeconds: number };

/** Sends handed over per dispatch job at most; a longer backlog (a permissive policy) goes on in the next job. */
const MAX_PER_RUN = 100;

/**
 * The pacer (issue 19 items 4 and 5): hands a SIM's waiting device sends to its phone, oldest
 * first, as fast as its sending policy allows and only while the phone is online. It runs as the
 * `message.outbound.pace` job of the SIM, under the lock of the SIM's `sim_pacing` row, so one
 * instance at a time dispatches for a SIM and the state it leaves (next_allowed_at, the day's
 * count) is committed with the `message.send` it appended: a restart neither bursts nor forgets.
 *
 * Every waiting send has a pace job due by the time it may go: the send enqueues one (at once,
 * or at send_at through the scheduled dispatch), and a run that stops at a pacing slot enqueues
 * the next at that slot (wake_at records it, so idle extra jobs do not multiply). A run that
 * finds the phone offline stops without one: the device's return enqueues
 * `message.outbound.device-online`, which runs the pacer of its SIMs. Extra jobs find nothing
 * to do and end.
 */
export async function paceSim(deps: PacerDeps, hostedSimId: number) {
  const now = deps.clock?.now() ?? Date.now();
  const handed = await deps.sql.begin(async (tx) => {
    let state = await lockPacing(tx, hostedSimId);
    const policies = new Map<number, SendingPolicy>();
    const events: NewEvent[] = [];
    let count = 0;
    let wake: number | null = null;
    for (let after = 0; count < MAX_PER_RUN; ) {
      const m = await oldestWaiting(tx, hostedSimId, after);
      if (!m?.device_ready) break;
      after = m.id;
      if (m.expires_at && m.expires_at.getTime() <= now) {
        if (await moveStatus(tx, m.id, "expired", ["queued"], { error: "No device picked up the message before it expired." }))
          events.push(...(await statusEvents(tx, m.organization_id, m.id)));
        continue;
      }
      let policy = policies.get(m.organization_id);
      if (!policy) {
        policy = (await effectivePolicy(tx, m.organization_id, hostedSimId)).policy;
        policies.set(m.organization_id, policy);
      }
      const slot = nextSlot(policy, state, now);
      if (slot > now) {
        wake = slot;
        break;
      }
      if (!(await markDispatched(tx, m.id, now))) continue;
      state = { ...afterSend(policy, state, now), wakeAt: state.wakeAt };
      events.push(deviceCommand(m.organization_id, m.device_id, (await findVisibleMessage(tx, m.organization_id, m.id))!));
      await deps.jobs.enqueue("message.outbound.device-timeout", { message_id: m.id }, { runAt: deviceDeadline(deps, m.expires_at) }, tx);
      count++;
    }
    if (count === MAX_PER_RUN) wake = now;
    // A job already due at or before `wake` and still ahead of now covers it; otherwise enqueue one.
    if (wake !== null && !(state.wakeAt !== null && state.wakeAt > now && state.wakeAt <= wake)) {
      await enqueuePace(deps.jobs, hostedSimId, new Date(wake), tx);
      state = { ...state, wakeAt: wake };
    }
    await savePacing(tx, hostedSimId, state);
    await appendEvents(tx, events);
    return events.length;
  });
  if (handed > 0) {
    deps.jobs.wake();
    deps.events.notify();
  }
}

export const enqueuePace = (jobs: JobQueue, hostedSimId: number, runAt: Date, tx: Sql) =>
  jobs.enqueue("message.outbound.pace", { hosted_sim_id: hostedSimId }, { runAt }, tx);

/** A device came back online (its heartbeat enqueued this): its SIMs' waiting sends go out, paced. */
export async function resumeDevice(deps: PacerDeps, deviceId: number) {
  for (const hostedSimId of await simsWaitingFor(deps.sql, deviceId)) await paceSim(deps, hostedSimId);
}
