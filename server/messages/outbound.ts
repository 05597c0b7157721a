import type postgres from "postgres";
import type { Caller } from "../auth/caller";
import type { Pool, Sql } from "../db/client";
import { AppError, invalidState, notFound } from "../errors";
import { event } from "../events/catalog";
import { appendEvents } from "../events/log";
import type { EventTail } from "../events/tail";
import { enqueueJobs, type JobQueue } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { numberLocked, requireNumber } from "../numbers/locks";
import { attachmentOf, byosDeviceOf, type HostedSimRow } from "../numbers/store";
import { findVisibleMessage } from "./history-store";
import { callOffEvents, outboundViews, statusEventsOf, statusEventsOfViews } from "./outbound-events";
import { insertOutbound, moveStatus, moveStatuses, type OutboundInsert, type StatusExtra, sendContext, takeQuota } from "./outbound-store";
import { planSend, type SendRequest } from "./send-request";
import { chooseSenders } from "./sender-pool";
import { CANCELLABLE } from "./status";
import { type Message, monthlyOutboundCount } from "./store";

export type OutboundDeps = { sql: Pool; jobs: JobQueue; events: Pick<EventTail, "notify">; deviceTimeoutSeconds: number; clock?: Clock };

const nowOf = (deps: Pick<OutboundDeps, "clock">) => deps.clock?.now() ?? Date.now();

const planLimitReached = (limit: number, bulk?: { requested: number; left: number }) =>
  new AppError(
    402,
    "plan_limit_reached",
    bulk
      ? `This bulk send of ${bulk.requested} message${bulk.requested === 1 ? "" : "s"} does not fit your plan: ${bulk.left} of its ${limit} outbound messages are left this month. Nothing was sent.`
      : `Your plan's ${limit} outbound messages for this month are used up.`,
  );

/**
 * A status move of some outbound messages: those of `ids` still in one of `from` go to `to`.
 * `callOff`: the phone a moved send was handed to (message.send) is told not to send it
 * (message.send_cancelled), as a cancel tells it: the send ended without the phone taking it up.
 */
export type StatusMove = { ids: number[]; to: string; from: string[]; extra?: StatusExtra; callOff?: boolean };

/**
 * Status moves and their events in the caller's transaction; the ids that moved (the others were
 * not in their `from`). The caller notifies the event tail after its commit.
 */
export async function applyStatusMoves(tx: Sql, moves: StatusMove[]): Promise<number[]> {
  const ids: number[] = [];
  const calledOff: number[] = [];
  for (const m of moves) {
    const now = await moveStatuses(tx, m.ids, m.to, m.from, m.extra);
    ids.push(...now);
    if (m.callOff) calledOff.push(...now);
  }
  if (ids.length > 0) await appendEvents(tx, [...(await statusEventsOf(tx, ids)), ...(await callOffEvents(tx, calledOff))]);
  return ids;
}

/** Status moves and their events in one transaction of their own (applyStatusMoves); the ids that moved. */
export async function changeStatuses(deps: Pick<OutboundDeps, "sql" | "events">, moves: StatusMove[]): Promise<number[]> {
  if (moves.every((m) => m.ids.length === 0)) return [];
  const moved = await deps.sql.begin((tx) => applyStatusMoves(tx, moves));
  if (moved.length > 0) deps.events.notify();
  return moved;
}

/** Moves an outbound message's status and appends its event in the same transaction; false when it was not in `from`. */
export async function changeStatus(
  deps: Pick<OutboundDeps, "sql" | "events">,
  messageId: number,
  to: string,
  from: string[],
  extra: StatusExtra = {},
): Promise<boolean> {
  return (await changeStatuses(deps, [{ ids: [messageId], to, from, extra }])).length > 0;
}

/**
 * POST /api/messages. The messages, their visibility rows and jobs are one statement, their
 * status events two more, and the quota is taken last by one conditional upsert of the month's
 * count (takeQuota): concurrent sends at the last unit of the month never go over it, an
 * organization's sends wait on each other only for that statement and the commit, and a bulk send
 * is counted whole (all its recipients fit, or the transaction stores none). A send costs four
 * round trips (the insert with its visibility rows and jobs, its status events read and
 * appended, the quota) and the commit, whatever its number of recipients. BYOS numbers go
 * through their device: the send waits `queued` for the SIM's pacer (pacer.ts), which hands it
 * to the phone (`message.send` on its private channel) when the phone is online and the SIM's
 * sending policy allows, until expires_at (then `expired`); pool numbers through the provider
 * API on the job queue. A send with send_at ahead is stored `scheduled` and dispatched at that
 * time (dispatch.ts). `hosted_sims` (a sender pool) picks each recipient's number first
 * (sender-pool.ts); a bulk send through a pool is stored one insert per chosen number, in the
 * same transaction, so the quota still takes it whole or not at all.
 */
export async function sendMessage(deps: OutboundDeps, c: Caller, body: SendRequest): Promise<{ batchId: string | null; messages: Message[] }> {
  const org = c.organization.id;
  const plan = planSend(body, nowOf(deps));
  const chosen = body.hosted_sims
    ? await chooseSenders(
        deps.sql,
        c,
        body.hosted_sims,
        plan.recipients.map((r) => r.to),
        nowOf(deps),
      )
    : plan.recipients.map(() => null);
  const groups = await senderGroups(deps, c, body.hosted_sim, plan.recipients, chosen);
  const batchId = plan.bulk ? crypto.randomUUID() : null;
  const views = await deps.sql.begin(async (tx) => {
    let stored: number[] = [];
    let limit = 0;
    for (const { sim, device, recipients } of groups) {
      const context = await sendContext(tx, org, sim.id);
      const { holder } = context;
      limit = context.limit;
      if (holder && holder.organization_id !== org) throw numberLocked(holder.locked_until);
      const insert: OutboundInsert = {
        hostedSimId: sim.id,
        number: sim.number,
        organizationId: org,
        teamId: holder ? sim.lock_team_id : (attachmentOf(sim, org)?.team_id ?? null),
        locked: holder !== null,
        deviceId: device?.device_id ?? null,
        simSlot: device?.sim_slot ?? null,
        status: plan.sendAt ? "scheduled" : "queued",
        sendAt: plan.sendAt,
        expiresAt: plan.expiresAt,
        batchId,
        senderPool: body.hosted_sims ?? null,
      };
      const jobs = (ids: postgres.Fragment) => sendJobs(tx, ids, { sendAt: plan.sendAt, expiresAt: plan.expiresAt, pace: device ? sim.id : null });
      stored = stored.concat(await insertOutbound(tx, insert, recipients, jobs));
    }
    const views = await outboundViews(tx, stored);
    await appendEvents(tx, statusEventsOfViews(views));
    // Last: the quota's row is locked from here to the commit only.
    if (!(await takeQuota(tx, org, stored.length, limit))) {
      const left = Math.max(0, limit - (await monthlyOutboundCount(tx, org)));
      throw planLimitReached(limit, plan.bulk ? { requested: plan.recipients.length, left } : undefined);
    }
    return views;
  });
  deps.jobs.wake();
  deps.events.notify();
  // In the order of the request's recipients (a pool's bulk send stores them number by number).
  const order = new Map(plan.recipients.map((r, i) => [r.to, i]));
  return { batchId, messages: views.map((v) => v.message).sort((a, b) => order.get(a.to)! - order.get(b.to)!) };
}

type SenderGroup = { sim: HostedSimRow; device: Awaited<ReturnType<typeof byosDeviceOf>>; recipients: { to: string; text: string }[] };

/** The recipients by the number they go from (the one `hosted_sim`, or each's choice in the pool), each number checked able to send. */
async function senderGroups(
  deps: OutboundDeps,
  c: Caller,
  hostedSim: number | undefined,
  recipients: { to: string; text: string }[],
  chosen: (HostedSimRow | null)[],
): Promise<SenderGroup[]> {
  const single = hostedSim === undefined ? null : await requireNumber(deps.sql, c, hostedSim);
  const groups = new Map<number, SenderGroup>();
  for (const [i, r] of recipients.entries()) {
    const sim = chosen[i] ?? single!;
    let group = groups.get(sim.id);
    if (!group) {
      if (sim.status !== "active") throw invalidState("This number is inactive and cannot send.");
      const device = sim.provider === "byos" ? await byosDeviceOf(deps.sql, sim.id) : null;
      if (sim.provider === "byos" && device?.device_status !== "active") throw invalidState("No active device holds this number right now.");
      group = { sim, device, recipients: [] };
      groups.set(sim.id, group);
    }
    group.recipients.push(r);
  }
  return [...groups.values()];
}

/**
 * The jobs of a send, in its insert statement: the scheduled dispatch at send_at; else for a
 * device send the SIM's pace job now and, with expires_at, the jobs that expire its sends then
 * if still waiting (without expires_at a send waits for its phone until cancelled); else the
 * provider send.
 */
function sendJobs(tx: Sql, ids: postgres.Fragment, o: { sendAt: Date | null; expiresAt: Date | null; pace: number | null }) {
  const payloads = tx`select jsonb_build_object('message_id', id) from (${ids}) as t`;
  if (o.sendAt) return [enqueueJobs(tx, "message.outbound.dispatch", payloads, { runAt: o.sendAt })];
  if (o.pace === null) return [enqueueJobs(tx, "message.outbound.provider", payloads)];
  const pace = enqueueJobs(tx, "message.outbound.pace", tx`select jsonb_build_object('hosted_sim_id', ${o.pace}::bigint) where exists (${ids})`);
  return o.expiresAt ? [pace, enqueueJobs(tx, "message.outbound.device-timeout", payloads, { runAt: o.expiresAt })] : [pace];
}

/**
 * Cancels a send of the caller's organization that has not gone out: `scheduled`, or `queued`
 * (not yet handed to the provider; for a device, not yet reported `sending` by it). A cancelled
 * message answers again unchanged; any other state is 409. The quota unit is given back (cancelled
 * messages are not counted).
 */
export async function cancelMessage(deps: Pick<OutboundDeps, "sql" | "events">, c: Caller, messageId: number): Promise<Message> {
  const org = c.organization.id;
  const found = await findVisibleMessage(deps.sql, org, messageId);
  if (!found) throw notFound("Message");
  if (found.direction !== "outbound") throw invalidState("A received message cannot be cancelled.");
  if (found.status === "cancelled") return found;
  const moved = await deps.sql.begin(async (tx) => {
    const [was] = await tx<{ handed: boolean }[]>`select dispatched_at is not null as handed from messages where id = ${messageId} for update`;
    if (!was || !(await moveStatus(tx, messageId, "cancelled", CANCELLABLE))) return false;
    const events = await statusEventsOf(tx, [messageId]);
    // A BYOS send the pacer already handed to the phone (message.send): tell the phone not to send it.
    if (was.handed && found.device_id)
      events.push(
        event.messageSendCancelled({ organizationId: org, hostedSimId: found.hosted_sim_id, deviceId: found.device_id }, { message: { id: messageId } }),
      );
    await appendEvents(tx, events);
    return true;
  });
  if (!moved) {
    const now = await findVisibleMessage(deps.sql, org, messageId);
    if (now?.status === "cancelled") return now;
    const status = now?.status ?? found.status;
    // A `sending` one has been handed to its phone or the provider (a provider send between retries
    // included): it may be on its way, and a cancel could not call it back.
    throw invalidState(
      status === "sending"
        ? "A sending message has been handed to its phone or the provider and can no longer be cancelled."
        : `A ${status} message has gone out (or ended) and can no longer be cancelled.`,
    );
  }
  deps.events.notify();
  return (await findVisibleMessage(deps.sql, org, messageId))!;
}
