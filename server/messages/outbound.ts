import type postgres from "postgres";
import type { Caller } from "../auth/caller";
import type { Pool, Sql } from "../db/client";
import { AppError, invalidState, notFound } from "../errors";
import { event, messageStatusEvent } from "../events/catalog";
import { appendEvents, type NewEvent } from "../events/log";
import type { MessageEvent } from "../events/payloads";
import type { EventTail } from "../events/tail";
import { enqueueJobs, type JobQueue } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { numberLocked, requireNumber } from "../numbers/locks";
import { attachmentOf, byosDeviceOf } from "../numbers/store";
import { findVisibleMessage } from "./history-store";
import { findOutbound, findOutboundMessages, insertOutbound, liveLockHolder, lockOrganizationQuota, monthlyLimit, moveStatus } from "./outbound-store";
import { planSend, type SendRequest } from "./send-request";
import { chooseSender } from "./sender-pool";
import { CANCELLABLE } from "./status";
import { type Message, monthlyOutboundCount, organizationView } from "./store";

export type OutboundDeps = { sql: Pool; jobs: JobQueue; events: Pick<EventTail, "notify">; deviceTimeoutSeconds: number; clock?: Clock };

const nowOf = (deps: Pick<OutboundDeps, "clock">) => deps.clock?.now() ?? Date.now();

const planLimitReached = (limit: number, bulk?: { requested: number; left: number }) =>
  new AppError(
    402,
    "plan_limit_reached",
    bulk
      ? `This bulk send of ${bulk.requested} messages does not fit your plan: ${bulk.left} of its ${limit} outbound messages are left this month. Nothing was sent.`
      : `Your plan's ${limit} outbound messages for this month are used up.`,
  );

/** A message as one organization sees it in its events: its team there, its alias of the number. */
export async function messageEventPayload(sql: Sql, organizationId: number, message: Message): Promise<MessageEvent> {
  const hostedSimId = message.hosted_sim_id ?? 0;
  const view = await organizationView(sql, organizationId, hostedSimId, message.team_id);
  return {
    message: message as unknown as MessageEvent["message"],
    hosted_sim: { id: hostedSimId, number: message.number, alias: view.alias },
    team: message.team_id === null || view.teamName === null ? null : { id: message.team_id, name: view.teamName },
  };
}

/** The event of an outbound message's current status, to the sending organization only (outbound messages are visible to it alone). */
export async function statusEvents(sql: Sql, organizationId: number, messageId: number): Promise<NewEvent[]> {
  const message = await findVisibleMessage(sql, organizationId, messageId);
  const build = message && messageStatusEvent(message.status);
  if (!message || !build) return [];
  return [build({ organizationId, hostedSimId: message.hosted_sim_id, teamId: message.team_id }, await messageEventPayload(sql, organizationId, message))];
}

/** Moves an outbound message's status and appends its event in the same transaction; false when it was not in `from`. */
export async function changeStatus(
  deps: Pick<OutboundDeps, "sql" | "events">,
  organizationId: number,
  messageId: number,
  to: string,
  from: string[],
  extra: Parameters<typeof moveStatus>[4] = {},
): Promise<boolean> {
  const moved = await deps.sql.begin(async (tx) => {
    if (!(await moveStatus(tx, messageId, to, from, extra))) return false;
    await appendEvents(tx, await statusEvents(tx, organizationId, messageId));
    return true;
  });
  if (moved) deps.events.notify();
  return moved;
}

/**
 * POST /api/messages. The quota check and the insert run under a per-organization advisory
 * lock, so concurrent sends at the last unit of the month never go over it; a bulk send is
 * counted whole (all its recipients fit, or none is stored). BYOS numbers go through their
 * device: the send waits `queued` for the SIM's pacer (pacer.ts), which hands it to the phone
 * (`message.send` on its private channel) when the phone is online and the SIM's sending policy
 * allows, until expires_at (then `expired`); pool numbers through the provider API on the job
 * queue. A send with send_at ahead is stored `scheduled` and dispatched by a job at that time.
 * `hosted_sims` (a sender pool) picks the number first (sender-pool.ts).
 */
export async function sendMessage(deps: OutboundDeps, c: Caller, body: SendRequest): Promise<{ batchId: string | null; messages: Message[] }> {
  const org = c.organization.id;
  const plan = planSend(body, nowOf(deps));
  const sim = body.hosted_sims
    ? await chooseSender(deps.sql, c, body.hosted_sims, plan.recipients[0]!.to, nowOf(deps))
    : await requireNumber(deps.sql, c, body.hosted_sim!);
  if (sim.status !== "active") throw invalidState("This number is inactive and cannot send.");
  const device = sim.provider === "byos" ? await byosDeviceOf(deps.sql, sim.id) : null;
  if (sim.provider === "byos" && device?.device_status !== "active") throw invalidState("No active device holds this number right now.");
  const batchId = plan.bulk ? crypto.randomUUID() : null;
  const ids = await deps.sql.begin(async (tx) => {
    await lockOrganizationQuota(tx, org);
    const holder = await liveLockHolder(tx, sim.id);
    if (holder && holder.organization_id !== org) throw numberLocked(holder.locked_until);
    const limit = await monthlyLimit(tx, org);
    const used = await monthlyOutboundCount(tx, org);
    if (used + plan.recipients.length > limit)
      throw planLimitReached(limit, plan.bulk ? { requested: plan.recipients.length, left: Math.max(0, limit - used) } : undefined);
    const messageIds = await insertOutbound(
      tx,
      {
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
      },
      plan.recipients,
    );
    // One statement for every recipient's job, in the send's transaction.
    const payloads = tx`select jsonb_build_object('message_id', id) from unnest(${messageIds}::bigint[]) as id`;
    if (plan.sendAt) await enqueueJobs(tx, "message.outbound.dispatch", payloads, { runAt: plan.sendAt });
    else if (device) await waitForPhone(tx, sim.id, payloads, plan.expiresAt);
    else await enqueueJobs(tx, "message.outbound.provider", payloads);
    const events: NewEvent[] = [];
    for (const messageId of messageIds) events.push(...(await statusEvents(tx, org, messageId)));
    await appendEvents(tx, events);
    return messageIds;
  });
  deps.jobs.wake();
  deps.events.notify();
  const messages = await findOutboundMessages(deps.sql, org, ids);
  return { batchId, messages };
}

/** When a device send not picked up ends: at expires_at when given, else OUTBOUND_DEVICE_TIMEOUT_SECONDS from now. */
export const deviceDeadline = (deps: Pick<OutboundDeps, "deviceTimeoutSeconds" | "clock">, expiresAt: Date | null) =>
  expiresAt ?? new Date(nowOf(deps) + deps.deviceTimeoutSeconds * 1000);

/**
 * Device sends become `queued` waiting for their SIM's pacer: one pace job for the SIM now (the
 * pacer hands them over in order), and with expires_at the jobs that expire them then if still
 * waiting (the device-timeout queue; without expires_at a send waits for its phone until cancelled).
 */
async function waitForPhone(tx: Sql, hostedSimId: number, payloads: postgres.Fragment, expiresAt: Date | null) {
  await enqueueJobs(tx, "message.outbound.pace", tx`select jsonb_build_object('hosted_sim_id', ${hostedSimId}::bigint)`);
  if (expiresAt) await enqueueJobs(tx, "message.outbound.device-timeout", payloads, { runAt: expiresAt });
}

/** `message.send` to the device that holds the number (appended with the message's `queued`). */
export function deviceCommand(organizationId: number, deviceId: number, message: Message): NewEvent {
  const { id, hosted_sim_id, number, to, text, sim_slot } = message;
  return event.messageSend({ organizationId, hostedSimId: hosted_sim_id, deviceId }, { message: { id, hosted_sim_id, number, to, text, sim_slot } });
}

/**
 * The dispatch job of a scheduled send, at its send_at: `scheduled → queued` and on to the
 * SIM's pacer or the provider, as a send made then would go; `expired` instead when expires_at has
 * passed (the job ran late, e.g. after a restart), so it is never sent late. A cancelled
 * message is left alone.
 */
export async function dispatchScheduled(deps: OutboundDeps, messageId: number) {
  const m = await findOutbound(deps.sql, messageId);
  if (m?.status !== "scheduled") return;
  if (m.expires_at && Date.parse(m.expires_at) <= nowOf(deps)) {
    await changeStatus(deps, m.organization_id, m.id, "expired", ["scheduled"], { error: "It expired before it could be sent." });
    return;
  }
  const moved = await deps.sql.begin(async (tx) => {
    if (!(await moveStatus(tx, m.id, "queued", ["scheduled"]))) return false;
    const expiresAt = m.expires_at ? new Date(m.expires_at) : null;
    if (m.device_id) await waitForPhone(tx, m.hosted_sim_id!, tx`select jsonb_build_object('message_id', ${m.id}::bigint)`, expiresAt);
    else await deps.jobs.enqueue("message.outbound.provider", { message_id: m.id }, {}, tx);
    await appendEvents(tx, await statusEvents(tx, m.organization_id, m.id));
    return true;
  });
  if (!moved) return;
  deps.jobs.wake();
  deps.events.notify();
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
    const events = await statusEvents(tx, org, messageId);
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
    throw invalidState(`A ${now?.status ?? found.status} message has gone out (or ended) and can no longer be cancelled.`);
  }
  deps.events.notify();
  return (await findVisibleMessage(deps.sql, org, messageId))!;
}
