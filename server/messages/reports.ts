import type { Caller } from "../auth/caller";
import { assertReportsSends } from "../devices/transitions";
import { invalidState, notFound } from "../errors";
import { findVisibleMessage } from "./history-store";
import { changeStatus, type OutboundDeps } from "./outbound";
import { findDeviceOutbound, findOutbound, type OutboundRow, type StatusExtra } from "./outbound-store";
import { judgeReport } from "./status";
import type { Message } from "./store";

type Deps = Pick<OutboundDeps, "sql" | "events">;

/** What a delivery report did: moved the status on, nothing (a duplicate or a step already passed), or nothing because it contradicts a final state. */
export type ReportOutcome = "moved" | "stale" | "conflict";

/**
 * Applies a delivery report (a device's or the provider's) to an outbound message: one owner of
 * the rule that a status never moves backwards (status.ts `judgeReport`). The move is
 * conditional on the status judged, so a report racing another is judged again against the
 * status it lost to; statuses only move forward, so this ends within a few rounds.
 */
export async function applyReport(deps: Deps, message: OutboundRow, status: string, extra: StatusExtra): Promise<ReportOutcome> {
  let current = message.status;
  for (let round = 0; round < 8; round++) {
    const verdict = judgeReport(current, status);
    if (verdict !== "move") return verdict;
    if (await changeStatus(deps, message.id, status, [current], extra)) return "moved";
    const now = await findOutbound(deps.sql, message.id);
    if (!now) return "conflict";
    current = now.status;
  }
  return "conflict";
}

/**
 * A device's report on an outbound message it was asked to send (handed to it: 409 before). A
 * duplicate or late report (a step the message has passed) answers the message unchanged; one
 * that contradicts a final state (e.g. `sent` after the pick-up timeout failed it) is 409. The
 * device taking the message (its first report) counts one attempt.
 */
export async function reportDeviceStatus(deps: Deps, c: Caller, q: { deviceId: number; messageId: number; status: string; error?: string }): Promise<Message> {
  const org = c.organization.id;
  const found = await findDeviceOutbound(deps.sql, { messageId: q.messageId, deviceId: q.deviceId, organizationId: org });
  if (!found) throw notFound("Message");
  assertReportsSends(found.device_status, found.status);
  // Its phone learns of a send from message.send, once the pacer has handed it over: before that it
  // waits on the pace (and may still be cancelled), and no report may move it past the pacer.
  if (!found.dispatched) throw invalidState(`The message has not been handed to the device yet (it is ${found.status}).`);
  const outcome = await applyReport(deps, found, q.status, { error: q.error ?? "The device reported a failure.", attempt: true });
  const now = (await findVisibleMessage(deps.sql, org, q.messageId))!;
  if (outcome === "conflict") throw invalidState(`A ${now.status} message cannot become ${q.status}.`);
  return now;
}

/** The provider's MessageStatus values (the reference provider's status callback) and the status each means here; others are not news. */
const PROVIDER_STATUSES: Record<string, string> = {
  sending: "sending",
  sent: "sent",
  delivered: "delivered",
  undelivered: "failed",
  failed: "failed",
};

export type ProviderReport = { messageId: number; sid: string; status: string; errorCode?: string; errorMessage?: string };

/**
 * The provider's status callback for a message it was handed (a pool-number send). Null when no
 * such message exists or it went through a device. A report whose MessageSid is not the one
 * the provider answered for the message is a `conflict`; one that arrives before the send job
 * recorded the sid records it.
 */
export async function reportProviderStatus(deps: Deps, r: ProviderReport): Promise<{ outcome: ReportOutcome | "ignored"; message: OutboundRow } | null> {
  const found = await findOutbound(deps.sql, r.messageId);
  if (!found || found.device_id !== null) return null;
  if (found.external_id !== null && found.external_id !== r.sid) return { outcome: "conflict", message: found };
  const status = PROVIDER_STATUSES[r.status];
  if (!status) return { outcome: "ignored", message: found };
  const outcome = await applyReport(deps, found, status, { error: providerError(r), externalId: r.sid });
  return { outcome, message: found };
}

function providerError(r: ProviderReport): string {
  const what = r.errorMessage?.trim() || `the provider reported it ${r.status}`;
  return (r.errorCode ? `${what} (provider error ${r.errorCode})` : what).slice(0, 1000);
}
