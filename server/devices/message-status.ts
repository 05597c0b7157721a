import type { Pool } from "../db/client";
import { invalidState, notFound } from "../errors";
import { type Message, messageColumns } from "../messages/store";
import type { Publish } from "../realtime/bus";
import type { MessageStatusReport } from "./schema";

/** API.md outbound statuses a device may report, from each current one. */
const ALLOWED: Record<string, string[]> = {
  queued: ["sent", "delivered", "failed"],
  sending: ["sent", "delivered", "failed"],
  sent: ["sent", "delivered", "failed"],
  delivered: ["delivered"],
  failed: ["failed"],
};

/**
 * A device reports what became of an outbound message it was asked to send. Only its own
 * outbound messages; a repeat of the current status is accepted and changes nothing.
 */
export async function reportMessageStatus(deps: { sql: Pool; publish: Publish }, deviceId: number, messageId: number, report: MessageStatusReport) {
  const message = await deps.sql.begin(async (tx) => {
    const [current] = await tx<{ status: string }[]>`
      select status from messages where id = ${messageId} and device_id = ${deviceId} and direction = 'outbound' for update`;
    if (!current) throw notFound("Message");
    if (!(ALLOWED[current.status] ?? []).includes(report.status)) {
      throw invalidState(`A message in status ${current.status} cannot become ${report.status}.`);
    }
    const [row] = await tx<(Message & { organization_id: number | null })[]>`
      update messages m set status = ${report.status}, error = ${report.status === "failed" ? (report.error ?? "failed") : null},
        sent_at = case when ${report.status} in ('sent', 'delivered') then coalesce(sent_at, now()) else sent_at end, updated_at = now()
      where m.id = ${messageId}
      returning ${messageColumns(tx)}, m.organization_id`;
    return row!;
  });
  const { organization_id, ...data } = message;
  const channels = [
    ...(organization_id ? [`private-organization.${organization_id}`] : []),
    ...(data.hosted_sim_id ? [`private-number.${data.hosted_sim_id}`] : []),
  ];
  if (channels.length > 0)
    deps.publish(channels, "message.status_changed", { message: data }, organization_id ? { organizations: [organization_id] } : undefined);
  return data;
}
