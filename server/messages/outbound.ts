import type { Caller } from "../auth/caller";
import type { Pool } from "../db/client";
import { AppError, invalidState, notFound } from "../errors";
import { enqueueJobs, type JobQueue } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { numberLocked, requireNumber } from "../numbers/locks";
import { attachmentOf, byosDeviceOf } from "../numbers/store";
import type { Publish } from "../realtime/bus";
import { findVisibleMessage } from "./history-store";
import {
  findDeviceOutbound,
  findOutbound,
  findOutboundMessages,
  insertOutbound,
  liveLockHolder,
  lockOrganizationQuota,
  monthlyLimit,
  moveStatus,
} from "./outbound-store";
import { planSend, type SendRequest } from "./send-request";
import { CANCELLABLE, canMove, statesBefore } from "./status";
import { type Message, monthlyOutboundCount } from "./store";

export type OutboundDeps = { sql: Pool; jobs: JobQueue; publish: Publish; deviceTimeoutSeconds: number; clock?: Clock };

const nowOf = (deps: Pick<OutboundDeps, "clock">) => deps.clock?.now() ?? Date.now();

const planLimitReached = (limit: number, bulk?: { requested: number; left: number }) =>
  new AppError(
    402,
    "plan_limit_reached",
    bulk
      ? `This bulk send of ${bulk.requested} messages does not fit your plan: ${bulk.left} of its ${limit} outbound messages are left this month. Nothing was sent.`
      : `Your plan's ${limit} outbound messages for this month are used up.`,
  );

/** `message.status_changed` to the sending organization only (outbound messages are visible to it alone). */
export async function announceStatus(deps: Pick<OutboundDeps, "sql" | "publish">, organizationId: number, messageId: number) {
  const message = await findVisibleMessage(deps.sql, organizationId, messageId);
  if (!message) return;
  deps.publish(`private-organization.${organizationId}`, "message.status_changed", { message });
  deps.publish(`private-number.${message.hosted_sim_id}`, "message.status_changed", { message }, { organizations: [organizationId] });
}

/**
 * POST /api/messages. The quota check and the insert run under a per-organization advisory
 * lock, so concurrent sends at the last unit of the month never go over it; a bulk send is
 * counted whole (all its recipients fit, or none is stored). BYOS numbers go through their
 * device (`message.send` on its private channel, failed if no device picks it up in time,
 * `expired` at expires_at when given); pool numbers through the provider API on the job queue.
 * A send with send_at ahead is stored `scheduled` and dispatched by a job at that time.
 */
export async function sendMessage(deps: OutboundDeps, c: Caller, body: SendRequest): Promise<{ batchId: string | null; messages: Message[] }> {
  const org = c.organization.id;
  const plan = planSend(body, nowOf(deps));
  const sim = await requireNumber(deps.sql, c, body.hosted_sim);
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
    else if (device) await enqueueJobs(tx, "message.outbound.device-timeout", payloads, { runAt: deviceDeadline(deps, plan.expiresAt) });
    else await enqueueJobs(tx, "message.outbound.provider", payloads);
    return messageIds;
  });
  deps.jobs.wake();
  const messages = await findOutboundMessages(deps.sql, org, ids);
  if (device && !plan.sendAt) for (const message of messages) orderDevice(deps, device.device_id, message);
  return { batchId, messages };
}

/** When a device send not picked up ends: at expires_at when given, else OUTBOUND_DEVICE_TIMEOUT_SECONDS from now. */
const deviceDeadline = (deps: Pick<OutboundDeps, "deviceTimeoutSeconds" | "clock">, expiresAt: Date | null) =>
  expiresAt ?? new Date(nowOf(deps) + deps.deviceTimeoutSeconds * 1000);

/** `message.send` to the device that holds the number. */
function orderDevice(deps: Pick<OutboundDeps, "publish">, deviceId: number, message: Message) {
  const { id, hosted_sim_id, number, to, text, sim_slot } = message;
  deps.publish(`private-device.${deviceId}`, "message.send", { message: { id, hosted_sim_id, number, to, text, sim_slot } });
}

/**
 * The dispatch job of a scheduled send, at its send_at: `scheduled → queued` and on to the
 * device or the provider, as a send made then would go; `expired` instead when expires_at has
 * passed (the job ran late, e.g. after a restart), so it is never sent late. A cancelled
 * message is left alone.
 */
export async function dispatchScheduled(deps: OutboundDeps, messageId: number) {
  const m = await findOutbound(deps.sql, messageId);
  if (m?.status !== "scheduled") return;
  if (m.expires_at && Date.parse(m.expires_at) <= nowOf(deps)) {
    if (await moveStatus(deps.sql, m.id, "expired", ["scheduled"], { error: "It expired before it could be sent." }))
      await announceStatus(deps, m.organization_id, m.id);
    return;
  }
  const moved = await deps.sql.begin(async (tx) => {
    if (!(await moveStatus(tx, m.id, "queued", ["scheduled"]))) return false;
    const expiresAt = m.expires_at ? new Date(m.expires_at) : null;
    if (m.device_id) await deps.jobs.enqueue("message.outbound.device-timeout", { message_id: m.id }, { runAt: deviceDeadline(deps, expiresAt) }, tx);
    else await deps.jobs.enqueue("message.outbound.provider", { message_id: m.id }, {}, tx);
    return true;
  });
  if (!moved) return;
  deps.jobs.wake();
  await announceStatus(deps, m.organization_id, m.id);
  if (m.device_id) orderDevice(deps, m.device_id, m);
}

/**
 * Cancels a send of the caller's organization that has not gone out: `scheduled`, or `queued`
 * (not yet handed to the provider; for a device, not yet reported `sending` by it). A cancelled
 * message answers again unchanged; any other state is 409. The quota unit is given back (cancelled
 * messages are not counted).
 */
export async function cancelMessage(deps: Pick<OutboundDeps, "sql" | "publish">, c: Caller, messageId: number): Promise<Message> {
  const org = c.organization.id;
  const found = await findVisibleMessage(deps.sql, org, messageId);
  if (!found) throw notFound("Message");
  if (found.direction !== "outbound") throw invalidState("A received message cannot be cancelled.");
  if (found.status === "cancelled") return found;
  if (!(await moveStatus(deps.sql, messageId, "cancelled", CANCELLABLE))) {
    const now = await findVisibleMessage(deps.sql, org, messageId);
    if (now?.status === "cancelled") return now;
    throw invalidState(`A ${now?.status ?? found.status} message has gone out (or ended) and can no longer be cancelled.`);
  }
  await announceStatus(deps, org, messageId);
  if (found.status === "queued" && found.device_id) deps.publish(`private-device.${found.device_id}`, "message.cancelled", { message: { id: messageId } });
  return (await findVisibleMessage(deps.sql, org, messageId))!;
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
