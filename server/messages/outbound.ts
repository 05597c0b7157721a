import type { Caller } from "../auth/caller";
import type { Pool, Sql } from "../db/client";
import { AppError, invalidState, notFound } from "../errors";
import { event, messageStatusEvent } from "../events/catalog";
import { appendEvents, type NewEvent } from "../events/log";
import type { MessageEvent } from "../events/payloads";
import type { EventTail } from "../events/tail";
import type { JobQueue } from "../jobs/queue";
import { numberLocked, requireNumber } from "../numbers/locks";
import { attachmentOf, byosDeviceOf } from "../numbers/store";
import { findVisibleMessage } from "./history-store";
import { findDeviceOutbound, insertOutbound, liveLockHolder, lockOrganizationQuota, monthlyLimit, moveStatus } from "./outbound-store";
import { canMove, statesBefore } from "./status";
import { type Message, monthlyOutboundCount, organizationView } from "./store";

export type OutboundDeps = { sql: Pool; jobs: JobQueue; events: Pick<EventTail, "notify">; deviceTimeoutSeconds: number };

const planLimitReached = (limit: number) => new AppError(402, "plan_limit_reached", `Your plan's ${limit} outbound messages for this month are used up.`);

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
async function statusEvents(sql: Sql, organizationId: number, messageId: number): Promise<NewEvent[]> {
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
 * lock, so concurrent sends at the last unit of the month never go over it. BYOS numbers go
 * through their device (`message.send` on its private channel, failed if no device picks it up
 * in time); pool numbers through the provider API on the job queue.
 */
export async function sendMessage(deps: OutboundDeps, c: Caller, body: { hosted_sim: number; to: string; text: string }): Promise<Message> {
  const org = c.organization.id;
  const sim = await requireNumber(deps.sql, c, body.hosted_sim);
  if (sim.status !== "active") throw invalidState("This number is inactive and cannot send.");
  const device = sim.provider === "byos" ? await byosDeviceOf(deps.sql, sim.id) : null;
  if (sim.provider === "byos" && device?.device_status !== "active") throw invalidState("No active device holds this number right now.");
  const id = await deps.sql.begin(async (tx) => {
    await lockOrganizationQuota(tx, org);
    const holder = await liveLockHolder(tx, sim.id);
    if (holder && holder.organization_id !== org) throw numberLocked(holder.locked_until);
    const limit = await monthlyLimit(tx, org);
    if ((await monthlyOutboundCount(tx, org)) >= limit) throw planLimitReached(limit);
    const messageId = await insertOutbound(tx, {
      hostedSimId: sim.id,
      number: sim.number,
      to: body.to,
      text: body.text,
      organizationId: org,
      teamId: holder ? sim.lock_team_id : (attachmentOf(sim, org)?.team_id ?? null),
      locked: holder !== null,
      deviceId: device?.device_id ?? null,
      simSlot: device?.sim_slot ?? null,
    });
    if (device) await deps.jobs.enqueue("message.outbound.device-timeout", { message_id: messageId }, { delayMs: deps.deviceTimeoutSeconds * 1000 }, tx);
    else await deps.jobs.enqueue("message.outbound.provider", { message_id: messageId }, {}, tx);
    const queued = await statusEvents(tx, org, messageId);
    if (device) {
      const m = (await findVisibleMessage(tx, org, messageId))!;
      const command = { id: m.id, hosted_sim_id: m.hosted_sim_id, number: m.number, to: m.to, text: m.text, sim_slot: m.sim_slot };
      queued.push(event.messageSend({ organizationId: org, hostedSimId: sim.id, deviceId: device.device_id }, { message: command }));
    }
    await appendEvents(tx, queued);
    return messageId;
  });
  deps.jobs.wake();
  deps.events.notify();
  return (await findVisibleMessage(deps.sql, org, id))!;
}

/** A device's report on an outbound message it was asked to send. Repeating the current status is a no-op. */
export async function reportDeviceStatus(
  deps: Pick<OutboundDeps, "sql" | "events">,
  c: Caller,
  q: { deviceId: number; messageId: number; status: string; error?: string },
): Promise<Message> {
  const org = c.organization.id;
  const found = await findDeviceOutbound(deps.sql, { messageId: q.messageId, deviceId: q.deviceId, organizationId: org });
  if (!found) throw notFound("Message");
  if (found.status !== q.status) {
    if (!canMove(found.status, q.status)) throw invalidState(`A ${found.status} message cannot become ${q.status}.`);
    const error = q.status === "failed" ? (q.error ?? "The device reported a failure.") : null;
    const moved = await changeStatus(deps, org, q.messageId, q.status, statesBefore(q.status), { error });
    if (!moved) {
      const now = await findVisibleMessage(deps.sql, org, q.messageId);
      if (now?.status !== q.status) throw invalidState(`The message is ${now?.status ?? "gone"} now and cannot become ${q.status}.`);
    }
  }
  return (await findVisibleMessage(deps.sql, org, q.messageId))!;
}
