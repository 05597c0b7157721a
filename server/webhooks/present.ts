import { iso } from "../lib/clock";
import type { LogRow } from "./delivery-store";
import type { IntegrationRow } from "./store";

/** Who is looking: a caller's kind and role in the organization (server/auth's Caller fits). */
export type Viewer = { kind: "session" | "oauth" | "api_key"; role: string | null };

/** What a masked header value reads as; sending it back in an update keeps the stored value. */
export const MASKED_HEADER_VALUE = "********";

/**
 * Custom header values are often the receiver's credentials: admins and owners (signed in, not
 * through an API key) read them; members and API keys see the names with masked values.
 */
export const mayReadHeaderValues = (viewer: Viewer) => viewer.kind !== "api_key" && (viewer.role === "admin" || viewer.role === "owner");

function visibleHeaders(headers: Record<string, string>, viewer: Viewer): Record<string, string> {
  if (mayReadHeaderValues(viewer)) return headers;
  return Object.fromEntries(Object.keys(headers).map((name) => [name, MASKED_HEADER_VALUE]));
}

/** SPEC.md 2.7 without the secret, which is shown only on create and regenerate, as `viewer` may see it. */
export function presentIntegration(row: IntegrationRow, viewer: Viewer) {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    has_secret: true,
    headers: visibleHeaders(row.headers, viewer),
    timeout_seconds: row.timeout_seconds,
    retry_count: row.retry_count,
    event_types: row.event_types,
    is_active: row.is_active,
    mappings: row.mappings,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function presentLog(row: LogRow) {
  return { ...row, next_retry_at: row.next_retry_at ? iso(row.next_retry_at) : null, created_at: iso(row.created_at) };
}
