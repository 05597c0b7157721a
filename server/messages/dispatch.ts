import type { Sql } from "../db/client";
import { appendEvents } from "../events/log";
import { enqueueJobs } from "../jobs/queue";
import type { OutboundDeps } from "./outbound";
import { statusEventsOf } from "./outbound-events";
import { moveStatuses } from "./outbound-store";
import { type PacerDeps, paceSimsIn } from "./pacer";

type Due = { id: number; hosted_sim_id: number; device_id: number | null; expires_at: Date | null };

/**
 * The dispatch of scheduled sends at their send_at (the `message.outbound.dispatch` jobs, a batch
 * of them per call): in one transaction every due send still `scheduled` becomes `queued` and
 * goes on as a send made then would (a provider job; a device send's expiry job at expires_at),
 * or `expired` when expires_at has passed (the job ran late, e.g. after a restart), so it is
 * never sent late; a cancelled message is left alone. The device sends' SIMs are paced in the
 * same transaction (pacer.ts), so a send whose SIM may send now is handed to its phone in the
 * commit that queues it, without a pace job between. A fixed number of statements per batch,
 * whatever its size.
 */
export async function dispatchScheduled(deps: OutboundDeps & PacerDeps, messageIds: number[]) {
  const now = deps.clock?.now() ?? Date.now();
  const handed = await deps.sql.begin(async (tx) => {
    const due = await tx<Due[]>`
      select id, hosted_sim_id, device_id, expires_at from messages
      where id = any(${messageIds}::bigint[]) and direction = 'outbound' and status = 'scheduled' order by id`;
    // Moved only from `scheduled` (conditional updates): a send cancelled meanwhile stays cancelled.
    const late = due.filter((m) => m.expires_at !== null && m.expires_at.getTime() <= now);
    const onTime = due.filter((m) => m.expires_at === null || m.expires_at.getTime() > now);
    const queued = new Set(await moveStatuses(tx, ids(onTime), "queued", ["scheduled"]));
    const moved = onTime.filter((m) => queued.has(m.id));
    await enqueueFollowUps(tx, moved);
    const sims = [...new Set(moved.filter((m) => m.device_id !== null).map((m) => m.hosted_sim_id))];
    const paced = await paceSimsIn(deps, tx, sims);
    // Expired (a refund: the usage row locked) after the pacer has locked the sends it hands over,
    // as every path takes message rows before usage rows (a cancel does).
    const expired = await moveStatuses(tx, ids(late), "expired", ["scheduled"], { error: "It expired before it could be sent." });
    const events = [
      ...(await statusEventsOf(
        tx,
        [...expired, ...queued].sort((a, b) => a - b),
      )),
      ...paced,
    ];
    await appendEvents(tx, events);
    return events.length > 0;
  });
  if (!handed) return;
  deps.jobs.wake();
  deps.events.notify();
}

const ids = (ms: Due[]) => ms.map((m) => m.id);

/** Provider sends get their provider job; device sends with expires_at the job that expires them then if still waiting. */
async function enqueueFollowUps(tx: Sql, moved: Due[]) {
  const provider = moved.filter((m) => m.device_id === null);
  if (provider.length > 0)
    await enqueueJobs(tx, "message.outbound.provider", tx`select jsonb_build_object('message_id', id) from unnest(${ids(provider)}::bigint[]) as id`);
  const expiring = moved.filter((m) => m.device_id !== null && m.expires_at !== null);
  if (expiring.length > 0)
    await enqueueJobs(
      tx,
      "message.outbound.device-timeout",
      tx`select jsonb_build_object('message_id', e.id), e.at
         from unnest(${ids(expiring)}::bigint[], ${expiring.map((m) => m.expires_at!.toISOString())}::timestamptz[]) as e(id, at)`,
      { runAt: "per-row" },
    );
}
