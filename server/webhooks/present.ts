import { iso } from "../lib/clock";
import type { LogRow } from "./delivery-store";
import type { IntegrationRow } from "./store";

/** SPEC.md 2.7 without the secret, which is shown only on create and regenerate. */
export function presentIntegration(row: IntegrationRow) {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    has_secret: true,
    headers: row.headers,
    timeout_seconds: row.timeout_seconds,
    retry_count: row.retry_count,
    is_active: row.is_active,
    mappings: row.mappings,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function presentLog(row: LogRow) {
  return { ...row, next_retry_at: row.next_retry_at ? iso(row.next_retry_at) : null, created_at: iso(row.created_at) };
}
