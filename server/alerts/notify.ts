import nodemailer from "nodemailer";
import type { Sql } from "../db/client";
import type { Logger } from "../lib/logger";

export type Mailer = { send(to: string[], subject: string, text: string): Promise<void> } | null;

/** SMTP through nodemailer when SMTP_URL is set; otherwise null (alerts are recorded and logged only). */
export function createMailer(smtpUrl: string | undefined, from: string): Mailer {
  if (!smtpUrl) return null;
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    async send(to, subject, text) {
      await transport.sendMail({ from, to, subject, text });
    },
  };
}

export type Alert = { organizationId: number; kind: string; subjectId: number | null; subject: string; text: string };

/**
 * Records an alert and mails it to the organization's owners and admins. The record is kept
 * whether or not mail is configured or delivery works; a failed send is noted on it.
 */
export async function notifyOrganizationAdmins(deps: { sql: Sql; mailer: Mailer; logger: Logger }, alert: Alert) {
  const recipients = (
    await deps.sql<{ email: string }[]>`
      select u.email from memberships m join users u on u.id = m.user_id
      where m.organization_id = ${alert.organizationId} and m.role in ('owner', 'admin') order by u.id`
  ).map((r) => r.email);
  const [row] = await deps.sql<{ id: number }[]>`
    insert into alerts (organization_id, kind, subject_id, subject, recipients)
    values (${alert.organizationId}, ${alert.kind}, ${alert.subjectId}, ${alert.subject}, ${recipients}) returning id`;
  deps.logger.info({ alert: row!.id, kind: alert.kind, organization: alert.organizationId, recipients: recipients.length }, alert.subject);
  if (!deps.mailer || recipients.length === 0) return row!.id;
  try {
    await deps.mailer.send(recipients, alert.subject, alert.text);
    await deps.sql`update alerts set sent_at = now() where id = ${row!.id}`;
  } catch (e) {
    const message = (e as Error).message.slice(0, 500);
    deps.logger.warn({ alert: row!.id, err: message }, "alert mail failed");
    await deps.sql`update alerts set error = ${message} where id = ${row!.id}`;
  }
  return row!.id;
}
