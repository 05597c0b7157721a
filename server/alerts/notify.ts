import nodemailer from "nodemailer";
import type { Sql } from "../db/client";
import type { Logger } from "../lib/logger";

export type Mailer = { send(to: string[], subject: string, text: string): Promise<void> } | null;

/**
 * How long a mail server may take: to connect, to greet, and between two answers (nodemailer's
 * defaults are 2 min, 30 s and 10 min). A mail no server took within them is noted as failed.
 */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/** SMTP through nodemailer when SMTP_URL is set; otherwise null (alerts are recorded and logged only). */
export function createMailer(smtpUrl: string | undefined, from: string): Mailer {
  if (!smtpUrl) return null;
  const transport = nodemailer.createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS });
  return {
    async send(to, subject, text) {
      await transport.sendMail({ from, to, subject, text });
    },
  };
}

export type Alert = { organizationId: number; kind: string; subjectId: number | null; subject: string; text: string };

/**
 * Records an alert and mails it to the organization's owners and admins. The record is kept
 * whether or not mail is configured or delivery works; a failed send is noted on it. The mail goes
 * out after the alert is recorded, without the caller waiting for it: callers are a device's work
 * queue (its heartbeats and SMS wait behind it) and a webhook attempt (its record waits), which a
 * slow or hung mail server held for minutes.
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
  if (deps.mailer && recipients.length > 0) void mail(deps, deps.mailer, row!.id, recipients, alert);
  return row!.id;
}

async function mail(deps: { sql: Sql; logger: Logger }, mailer: NonNullable<Mailer>, alertId: number, recipients: string[], alert: Alert) {
  try {
    await mailer.send(recipients, alert.subject, alert.text);
    await deps.sql`update alerts set sent_at = now() where id = ${alertId}`;
  } catch (e) {
    const message = (e as Error).message.slice(0, 500);
    deps.logger.warn({ alert: alertId, err: message }, "alert mail failed");
    await deps.sql`update alerts set error = ${message} where id = ${alertId}`.catch(() => {});
  }
}
