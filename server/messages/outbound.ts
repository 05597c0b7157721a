import type { Caller } from "../auth/caller";
import type { Pool } from "../db/client";
import { AppError, invalidState, notFound } from "../errors";
import type { JobQueue } from "../jobs/queue";
import { numberLocked, requireNumber } from "../numbers/locks";
import { attachmentOf, byosDeviceOf } from "../numbers/store";
import type { Publish } from "../realtime/bus";
import { findVisibleMessage } from "./history-store";
import { findDeviceOutbound, insertOutbound, liveLockHolder, lockOrganizationQuota, monthlyLimit, moveStatus } from "./outbound-store";
import { canMove, statesBefore } from "./status";
import { type Message, monthlyOutboundCount } from "./store";

export type OutboundDeps = { sql: Pool; jobs: JobQueue; publish: Publish; deviceTimeoutSeconds: number };

const planLimitReached = (limit: number) => new AppError(402, "plan_limit_reached", `Your plan's ${limit} outbound messages for this month are used up.`);

/** `message.status_changed` to the sending organization only (outbound messages are visible to it alone). */
export async function announceStatus(deps: Pick<OutboundDeps, "sql" | "publish">, organizationId: number, messageId: number) {
  const message = await findVisibleMessage(deps.sql, organizationId, messageId);
  if (!message) return;
  deps.publish(`private-organization.${organizationId}`, "message.status_changed", { message });
  deps.publish(`private-number.${message.hosted_sim_id}`, "message.status_changed", { message }, { organizations: [organizationId] });
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
    return messageId;
  });
  deps.jobs.wake();
  const message = (await findVisibleMessage(deps.sql, org, id))!;
  if (device) {
    const { id: messageId, hosted_sim_id, number, to, text, sim_slot } = message;
    deps.publish(`private-device.${device.device_id}`, "message.send", { message: { id: messageId, hosted_sim_id, number, to, text, sim_slot } });
  }
  return message;
}

/** A device's report on an outbound message it was asked to send. Repeating the current status is a no-op. */
export async function reportDeviceStatus(
  deps: Pick<OutboundDeps, "sql" | "publish">,
  c: Caller,
  q: { deviceId: number; messageId: number; status: string; error?: string },
): Promise<Message> {
  const org = c.organization.id;
  const found = await findDeviceOutbound(deps.sql, { messageId: q.messageId, deviceId: q.deviceId, organizationId: org });
  if (!found) throw notFound("Message");
  if (found.status !== q.status) {
    if (!canMove(found.status, q.status)) throw invalidState(`A ${found.status} message cannot become ${q.status}.`);
    const error = q.status === "failed" ? (q.error ?? "The device reported a failure.") : null;
    const moved = await moveStatus(deps.sql, q.messageId, q.status, statesBefore(q.status), { error });
    if (!moved) {
      const now = await findVisibleMessage(deps.sql, org, q.messageId);
      if (now?.status !== q.status) throw invalidState(`The message is ${now?.status ?? "gone"} now and cannot become ${q.status}.`);
    } else await announceStatus(deps, org, q.messageId);
  }
  return (await findVisibleMessage(deps.sql, org, q.messageId))!;
}
