import type { Sql } from "../db/client";
import { enqueueJobs, removeJob } from "../jobs/queue";

export type DeliveryStatus = "pending" | "succeeded" | "failed" | "retrying";

/** A delivery with what its next attempt needs from the integration. */
export type DeliveryForAttempt = {
  id: number;
  event_id: string;
  event_type: string;
  message_id: number | null;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  integration_id: number;
  url: string;
  headers: Record<string, string>;
  timeout_seconds: number;
  retry_count: number;
  is_active: boolean;
  secret_sealed: string;
  /** The unbroken run of failures has lasted past the disable period. */
  failing_too_long: boolean;
};

export async function loadDeliveryForAttempt(sql: Sql, id: number, disableAfterSeconds: number): Promise<DeliveryForAttempt | null> {
  const [row] = await sql<DeliveryForAttempt[]>`
    select d.id, d.event_id, d.event_type, d.message_id, d.body, d.status, d.attempts,
           i.id as integration_id, i.url, i.headers, i.timeout_seconds, i.retry_count, i.is_active, i.secret_sealed,
           coalesce(i.failing_since <= now() - make_interval(secs => ${disableAfterSeconds}), false) as failing_too_long
    from webhook_deliveries d join webhook_integrations i on i.id = d.webhook_integration_id
    where d.id = ${id}`;
  return row ?? null;
}

export type AttemptRecord = {
  integrationId: number;
  deliveryId: number | null;
  eventId: string;
  eventType: string;
  messageId: number | null;
  attempt: number;
  status: DeliveryStatus;
  httpStatus: number | null;
  responseBody: string | null;
  responseTimeMs: number | null;
  error: string | null;
  nextRetryInMs: number | null;
};

const logValues = (sql: Sql, r: AttemptRecord) => sql`
  ${r.integrationId}, ${r.deliveryId}, ${r.eventId}, ${r.eventType}, ${r.messageId}, ${r.attempt}, ${r.status}, ${r.httpStatus},
  ${r.responseBody}, ${r.responseTimeMs}, ${r.error},
  ${r.nextRetryInMs === null ? null : sql`now() + make_interval(secs => ${r.nextRetryInMs / 1000})`}`;

/** A log record alone: test events, and attempts refused before any request. */
export async function insertLog(sql: Sql, r: AttemptRecord) {
  await sql`
    insert into webhook_delivery_logs (webhook_integration_id, delivery_id, event_id, event_type, message_id, attempt, status,
      http_status, response_body, response_time_ms, error, next_retry_at)
    values (${logValues(sql, r)})`;
}

/**
 * Records one attempt in one statement: the delivery's new state, its log record, the
 * integration's failure run when the endpoint was tried (`reached`: started by a failure,
 * broken by a success; the integration row is written only when that changes, so a busy healthy
 * endpoint never contends on it) and, for a final attempt, the removal of its job
 * (`finishedJobId`), which saves the queue a commit of its own (its delete then finds nothing).
 * The delivery is updated only from the attempt count this worker saw, so a duplicate worker
 * after a lost claim cannot record the same attempt twice.
 */
export async function recordAttempt(
  sql: Sql,
  r: AttemptRecord & { deliveryId: number },
  opts: { reached: "succeeded" | "failed" | null; finishedJobId: number | null },
) {
  const { reached, finishedJobId } = opts;
  const run =
    reached === null
      ? sql``
      : sql`, f as (update webhook_integrations set failing_since = ${reached === "succeeded" ? null : sql`now()`}
            where id = ${r.integrationId} and failing_since is ${reached === "succeeded" ? sql`not null` : sql`null`} and exists (select 1 from d))`;
  const job = finishedJobId === null ? sql`` : sql`, j as (${removeJob(sql, finishedJobId, sql`exists (select 1 from d)`)})`;
  // A record lost to a crash means the attempt is made again: at least once, as promised. So the
  // commit does not wait for the WAL flush (one disk sync per delivered webhook otherwise).
  await sql`
    with d as (
      update webhook_deliveries set status = ${r.status}, attempts = ${r.attempt}, updated_at = now()
      where id = ${r.deliveryId} and attempts = ${r.attempt - 1} returning id
    ), l as (
      insert into webhook_delivery_logs (webhook_integration_id, delivery_id, event_id, event_type, message_id, attempt, status,
        http_status, response_body, response_time_ms, error, next_retry_at)
      select ${logValues(sql, r)} where exists (select 1 from d)
    ) ${job} ${run}
    select set_config('synchronous_commit', 'off', true)`;
}

/** Turns an integration off once; returns it only to the caller that turned it off. */
export async function markIntegrationDisabled(sql: Sql, integrationId: number, reason: string) {
  const [row] = await sql<{ id: number; organization_id: number; name: string; url: string }[]>`
    update webhook_integrations set is_active = false, disabled_reason = ${reason}, disabled_at = now(), updated_at = now()
    where id = ${integrationId} and is_active returning id, organization_id, name, url`;
  return row ?? null;
}

export type LogRow = {
  id: number;
  webhook_integration_id: number;
  event_id: string;
  event_type: string;
  message_id: number | null;
  attempt: number;
  status: DeliveryStatus;
  http_status: number | null;
  response_body: string | null;
  response_time_ms: number | null;
  error: string | null;
  next_retry_at: Date | null;
  created_at: Date;
};

/** One page of an integration's log, newest first. */
export async function listLogs(sql: Sql, integrationId: number, opts: { status?: string; page: number; perPage: number }) {
  const where = sql`webhook_integration_id = ${integrationId} ${opts.status ? sql`and status = ${opts.status}` : sql``}`;
  const [count] = await sql<{ total: number }[]>`select count(*)::int as total from webhook_delivery_logs where ${where}`;
  const rows = await sql<LogRow[]>`
    select id, webhook_integration_id, event_id, event_type, message_id, attempt, status, http_status, response_body,
           response_time_ms, error, next_retry_at, created_at
    from webhook_delivery_logs where ${where}
    order by id desc limit ${opts.perPage} offset ${(opts.page - 1) * opts.perPage}`;
  return { rows, total: count?.total ?? 0 };
}

/**
 * An integration that should receive a message, with the alias and the team its event names: the
 * message's team in the integration's organization (docs/events.md "A message's team"), null when
 * it has none; not the mapping's team, which only decides whether the integration gets it.
 */
export type ForwardingTarget = { message_id: number; integration_id: number; team_id: number | null; team_name: string | null; alias: string | null };

/**
 * API.md "Forwarded": for each organization that may see a message, its active integrations
 * with an active mapping that matches. `always`: the number was on the mapping's team, or on no
 * team, for that organization (the team stamped at arrival; for a locked message, the number's
 * team in the lock holder's organization). `lock_required`: the message arrived while the
 * mapping's team held the lock. One row per message and integration.
 */
export function findForwardingTargets(sql: Sql, messageIds: number[]) {
  // The messages and their visibility are looked up by id first (materialized): left to itself,
  // the planner may start from the organization's side and walk all of its visibility rows.
  return sql<ForwardingTarget[]>`
    with m as materialized (
      select id, hosted_sim_id, locked, team_id from messages where id = any(${messageIds}::bigint[]) and direction = 'inbound'),
    v as materialized (
      select message_id, organization_id, team_id from message_visibility where message_id = any(${messageIds}::bigint[]))
    select distinct on (m.id, i.id) m.id as message_id, i.id as integration_id, v.team_id, vt.name as team_name, hso.alias
    from m
    join v on v.message_id = m.id
    left join teams vt on vt.id = v.team_id
    left join hosted_sim_organizations hso on hso.hosted_sim_id = m.hosted_sim_id and hso.organization_id = v.organization_id
    join webhook_integrations i on i.organization_id = v.organization_id and i.is_active
    join webhook_mappings mp on mp.webhook_integration_id = i.id and mp.is_active
    join teams t on t.id = mp.team_id and t.organization_id = i.organization_id
    cross join lateral (select case when m.locked then hso.team_id else v.team_id end as number_team) n
    where ((mp.forwarding_mode = 'always' and (n.number_team is null or n.number_team = mp.team_id))
        or (mp.forwarding_mode = 'lock_required' and m.locked and m.team_id = mp.team_id))
    order by m.id, i.id`;
}

export type NewDelivery = { webhook_integration_id: number; event_id: string; event_type: string; message_id: number | null; body: string };

/**
 * Inserts deliveries and their jobs in one statement. A delivery that already exists for the
 * same message and integration is skipped, and so is its job: forwarding is idempotent.
 */
export async function insertDeliveries(sql: Sql, rows: NewDelivery[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const created = await sql<{ id: number }[]>`
    with d as (
      insert into webhook_deliveries ${sql(rows, "webhook_integration_id", "event_id", "event_type", "message_id", "body")}
      on conflict (message_id, webhook_integration_id) where message_id is not null do nothing
      returning id
    )
    ${enqueueJobs(sql, "webhook.delivery", sql`select jsonb_build_object('delivery_id', d.id) from d`)}
    returning (payload->>'delivery_id')::bigint as id`;
  return created.map((r) => r.id);
}
