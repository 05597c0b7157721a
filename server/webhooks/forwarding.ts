import type { Sql } from "../db/client";
import type { Message } from "../messages/store";
import { findForwardingTargets, insertDeliveries } from "./delivery-store";
import { messageReceivedEvent, newEventId } from "./events";

/**
 * Creates one webhook delivery per eligible integration for each stored inbound message (as
 * findMessagesForFanout reads them; API.md "Forwarded" rules), with its job: one query for the
 * targets and one statement for the deliveries and their jobs, however many messages. Idempotent per message and integration:
 * running it again for the same messages creates nothing. Returns how many deliveries were
 * created. `now`: the events' creation time (the server clock's).
 */
export async function enqueueWebhookDeliveries(sql: Sql, messages: Message[], now: number): Promise<number> {
  if (messages.length === 0) return 0;
  const targets = await findForwardingTargets(
    sql,
    messages.map((m) => m.id),
  );
  if (targets.length === 0) return 0;
  const byId = new Map(messages.map((m) => [m.id, m]));
  const createdAt = new Date(now).toISOString();
  const rows = targets.map((t) => {
    const id = newEventId();
    return {
      webhook_integration_id: t.integration_id,
      event_id: id,
      event_type: "message.received",
      message_id: t.message_id,
      body: JSON.stringify(messageReceivedEvent(id, createdAt, byId.get(t.message_id)!, t)),
    };
  });
  const created = await insertDeliveries(sql, rows);
  return created.length;
}
