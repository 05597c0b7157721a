import type { Sql } from "../db/client";

/**
 * Creates one webhook delivery per eligible integration for a stored inbound message
 * (API.md "Forwarded" rules). Returns how many deliveries were enqueued.
 * (Filled in by the webhook feature.)
 */
export async function enqueueWebhookDeliveries(_tx: Sql, _messageId: number): Promise<number> {
  return 0;
}
