import { type Mailer, notifyOrganizationAdmins } from "../alerts/notify";
import type { Sql } from "../db/client";
import type { Logger } from "../lib/logger";
import { markIntegrationDisabled } from "./delivery-store";

/**
 * Sets an integration inactive and tells the organization's owners and admins why. Only the
 * worker whose update flipped it sends the alert, so concurrent failures mail once.
 */
export async function disableIntegration(deps: { sql: Sql; mailer: Mailer; logger: Logger }, integrationId: number, reason: string) {
  const row = await markIntegrationDisabled(deps.sql, integrationId, reason);
  if (!row) return;
  deps.logger.warn({ integration: row.id, organization: row.organization_id, reason }, "webhook integration disabled");
  await notifyOrganizationAdmins(deps, {
    organizationId: row.organization_id,
    kind: "webhook.disabled",
    subjectId: row.id,
    subject: `Webhook integration "${row.name}" was disabled`,
    text: [
      `The webhook integration "${row.name}" (id ${row.id}) sending to ${row.url} was set inactive because ${reason}.`,
      "",
      "No further messages are forwarded to it. Fix the endpoint, then set is_active back to true",
      `with PATCH /api/webhook-integrations/${row.id}; its delivery log shows the failed attempts.`,
    ].join("\n"),
  });
}
