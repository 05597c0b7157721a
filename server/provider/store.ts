import type { Sql } from "../db/client";

export type ProviderMessageKind = "verification" | "inbound" | "dropped";

/** Records a MessageSid; false when it was seen before (the callback is then a no-op). */
export async function recordProviderMessage(sql: Sql, messageSid: string, kind: ProviderMessageKind): Promise<boolean> {
  const rows = await sql`insert into provider_messages (message_sid, kind) values (${messageSid}, ${kind}) on conflict do nothing returning message_sid`;
  return rows.length > 0;
}
