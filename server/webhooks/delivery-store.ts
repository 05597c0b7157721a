import type { Sql } from "../db/client";
import { enqueueJobs, settleJobs } from "../jobs/queue";

export type DeliveryStatus = "pending" | "succeeded" | "failed" | "retrying";

/** A delivery with what its next attempt needs from the integration. */
export type DeliveryForAttempt = {
  /** Null: a live first attempt, whose row is written with its outcome (live-store.ts). */
  id: number | null;
  event_id: string;
  event_type: string;
  message_id: number | null;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  integration_id: number;
} & Omit<IntegrationForAttempt, "id">;

/** What an attempt needs from an integration, by id (inactive ones included: their deliveries are abandoned). */
export type IntegrationForAttempt = {
  id: number;
  url: string;
  headers: Record<string, string>;
  timeout_seconds: number;
  retry_count: number;
  is_active: boolean;
  secret_sealed: string;
  /** The unbroken run of failures has lasted past the disable period. */
  failing_too_long: boolean;
};

/** Deliveries with what their next attempt needs, in the order of `ids`' rows (by id). */
export async function loadDeliveriesForAttempt(sql: Sql, ids: number[], disableAfterSeconds: number): Promise<DeliveryForAttempt[]> {
  if (ids.length === 0) return [];
  return sql<DeliveryForAttempt[]>`
    select d.id, d.event_id, d.event_type, d.message_id, d.body, d.status, d.attempts,
           i.id as integration_id, i.url, i.headers, i.timeout_seconds, i.retry_count, i.is_active, i.secret_sealed,
           coalesce(i.failing_since <= now() - make_interval(secs => ${disableAfterSeconds}), false) as failing_too_long
    from webhook_deliveries d join webhook_integrations i on i.id = d.webhook_integration_id
    where d.id = any(${ids}::bigint[])
    order by d.id`;
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
};

/** A log record alone: test events. */
export async function insertLog(sql: Sql, r: AttemptRecord) {
  await sql`
    insert into webhook_delivery_logs (webhook_integration_id, delivery_id, event_id, event_type, message_id, attempt, status,
      http_status, response_body, response_time_ms, error)
    values (${r.integrationId}, ${r.deliveryId}, ${r.eventId}, ${r.eventType}, ${r.messageId}, ${r.attempt}, ${r.status}, ${r.httpStatus},
      ${r.responseBody}, ${r.responseTimeMs}, ${r.error})`;
}

/**
 * One attempt of a delivery as recorded: `retryAt` when another attempt is due then, `reached`
 * whether the endpoint answered (null: not tried), `jobId` the job it ran under (settled with it).
 */
export type FinishedAttempt = AttemptRecord & { retryAt: Date | null; reached: "succeeded" | "failed" | null; jobId: number | null };

/** The columns of an attempt's outcome, as both recorders (this one and live-store.ts's) hand them to jsonb_to_recordset. */
export const outcomeColumns = (r: FinishedAttempt) => ({
  integration_id: r.integrationId,
  event_id: r.eventId,
  event_type: r.eventType,
  message_id: r.messageId,
  attempt: r.attempt,
  status: r.status,
  http_status: r.httpStatus,
  response_body: r.responseBody,
  response_time_ms: r.responseTimeMs,
  error: r.error,
  retry_at: r.retryAt?.toISOString() ?? null,
});

/**
 * Each tried integration's failure run as the batch leaves it, its attempts in the order they
 * ended: `failed` when the last that reached the endpoint failed, `broken` when one succeeded (the
 * run it was in ended there; a failure after it starts a new one).
 */
export function failureRuns(attempts: FinishedAttempt[]) {
  const runs = new Map<number, { failed: boolean; broken: boolean }>();
  for (const r of attempts) {
    if (!r.reached) continue;
    const run = runs.get(r.integrationId) ?? { failed: false, broken: false };
    run.failed = r.reached === "failed";
    run.broken ||= r.reached === "succeeded";
    runs.set(r.integrationId, run);
  }
  return [...runs].map(([id, run]) => ({ id, ...run }));
}

/**
 * The statement part (a CTE body) that writes the batch's failure runs: a run starts at the first
 * failure after the last success (the batch's time, now()) and ends at a success. The integration
 * row is written only when that changes it, so a busy healthy endpoint never contends on it.
 */
export const recordFailureRuns = (sql: Sql, attempts: FinishedAttempt[]) => sql`
      update webhook_integrations i set failing_since = case when f.failed then now() end
      from jsonb_to_recordset(${sql.json(failureRuns(attempts) as never)}) as f(id bigint, failed boolean, broken boolean)
      where i.id = f.id and ((f.broken and (f.failed or i.failing_since is not null)) or (f.failed and i.failing_since is null))`;

/**
 * Records attempts in one statement, however many: each delivery's new state, its log record,
 * its job (removed when the delivery is done, released until `retryAt` when not), and the
 * failure run of each integration whose endpoint was tried (recordFailureRuns). A delivery is
 * updated only from the attempt count its worker saw, so a duplicate worker after a lost claim
 * cannot record the same attempt twice.
 */
export async function recordAttempts(sql: Sql, attempts: FinishedAttempt[]) {
  if (attempts.length === 0) return;
  const rows = attempts.map((r) => ({ delivery_id: r.deliveryId, job_id: r.jobId, ...outcomeColumns(r) }));
  // A record lost to a crash means the attempt is made again: at least once, as promised. So the
  // commit does not wait for the WAL flush (one disk sync per batch of webhooks otherwise).
  await sql`
    with r as materialized (
      select * from jsonb_to_recordset(${sql.json(rows as never)}) as r(delivery_id bigint, job_id bigint, integration_id bigint,
        event_id text, event_type text, message_id bigint, attempt int, status text, http_status int, response_body text,
        response_time_ms int, error text, retry_at timestamptz)
    ), d as (
      update webhook_deliveries w set status = r.status, attempts = r.attempt, updated_at = now()
      from r where w.id = r.delivery_id and w.attempts = r.attempt - 1 returning w.id
    ), l as (
      insert into webhook_delivery_logs (webhook_integration_id, delivery_id, event_id, event_type, message_id, attempt, status,
        http_status, response_body, response_time_ms, error, next_retry_at)
      select integration_id, delivery_id, event_id, event_type, message_id, attempt, status, http_status, response_body,
        response_time_ms, error, retry_at from r where delivery_id in (select id from d)
    ), ${settleJobs(
      sql,
      sql`select job_id from r where retry_at is null and delivery_id in (select id from d)`,
      sql`select job_id, retry_at from r where retry_at is not null and delivery_id in (select id from d)`,
    )}, f as (${recordFailureRuns(sql, attempts)})
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

/** What matching needs to know of one event (the log's row, not its payload alone). */
export type EventToMatch = {
  id: number;
  organization_id: number;
  type: string;
  team_id: number | null;
  hosted_sim_id: number | null;
  /** A message event's message arrived under a lock (its `locked`). */
  locked: boolean;
};

/**
 * The active integrations that get each event (docs/events.md "Webhooks"), as (event row,
 * integration) pairs; `integrationId` narrows to one integration (replay). An integration of the
 * event's organization gets it when subscribed to its type (or to `*`); a message event besides
 * needs an active mapping that matches (API.md "Forwarded"): `always` when the number's team is the
 * mapping's team or none (the team stamped for the organization at arrival, `team_id`; for a
 * locked message the lock holder organization's current assignment of the number),
 * `lock_required` when the message arrived while the mapping's team held the lock (`team_id` of a
 * locked message is the locking team). Device, SIM and number events belong to the organization:
 * no mapping needed.
 */
export async function findEventTargets(sql: Sql, events: EventToMatch[], integrationId: number | null = null) {
  // Matching depends on the event's shape only, and a batch holds few shapes (one number's
  // messages share theirs): each distinct shape is matched once, then handed to its events.
  const shapes = new Map<string, { shape: number; events: number[] }>();
  const distinct: (Omit<EventToMatch, "id"> & { shape: number })[] = [];
  for (const e of events) {
    const key = `${e.organization_id} ${e.type} ${e.team_id} ${e.hosted_sim_id} ${e.locked}`;
    let entry = shapes.get(key);
    if (!entry) {
      shapes.set(key, (entry = { shape: distinct.length, events: [] }));
      distinct.push({
        shape: entry.shape,
        organization_id: e.organization_id,
        type: e.type,
        team_id: e.team_id,
        hosted_sim_id: e.hosted_sim_id,
        locked: e.locked,
      });
    }
    entry.events.push(e.id);
  }
  const matched = await sql<{ shape: number; integration_id: number }[]>`
    with e as materialized (
      select * from jsonb_to_recordset(${sql.json(distinct as never)})
        as e(shape int, organization_id bigint, type text, team_id bigint, hosted_sim_id bigint, locked boolean))
    select e.shape, i.id as integration_id
    from e
    join webhook_integrations i on i.organization_id = e.organization_id and i.is_active
      and (e.type = any(i.event_types) or '*' = any(i.event_types))
      ${integrationId === null ? sql`` : sql`and i.id = ${integrationId}`}
    where e.type not like 'message.%' or exists (
      select 1 from webhook_mappings mp
      join teams t on t.id = mp.team_id and t.organization_id = i.organization_id
      left join hosted_sim_organizations hso on hso.hosted_sim_id = e.hosted_sim_id and hso.organization_id = e.organization_id
      where mp.webhook_integration_id = i.id and mp.is_active
        and ((mp.forwarding_mode = 'always' and coalesce((case when e.locked then hso.team_id else e.team_id end) = mp.team_id, true))
          or (mp.forwarding_mode = 'lock_required' and e.locked and e.team_id = mp.team_id)))`;
  const integrationsOf = new Map<number, number[]>();
  for (const m of matched) {
    const list = integrationsOf.get(m.shape);
    if (list) list.push(m.integration_id);
    else integrationsOf.set(m.shape, [m.integration_id]);
  }
  const targets: { event_row: number; integration_id: number }[] = [];
  for (const { shape, events: rows } of shapes.values()) {
    const integrations = integrationsOf.get(shape);
    if (integrations) for (const row of rows) for (const id of integrations) targets.push({ event_row: row, integration_id: id });
  }
  return targets.sort((a, b) => a.event_row - b.event_row || a.integration_id - b.integration_id);
}

export type DeliveryOrigin = "live" | "redelivery" | "replay";
/** Live deliveries and redeliveries, or replays (a queue of their own, server/jobs/registry.ts). */
export type DeliveryQueue = "webhook.delivery" | "webhook.replay";
export type NewDelivery = {
  webhook_integration_id: number;
  event_id: string;
  event_type: string;
  message_id: number | null;
  body: string;
  origin: DeliveryOrigin;
};

/** A delivery just created, with its job. */
export type CreatedDelivery = { delivery_id: number; job_id: number };

/** Inserts deliveries and their jobs in one statement (replays, redeliveries). */
export async function insertDeliveries(sql: Sql, rows: NewDelivery[], queue: DeliveryQueue): Promise<CreatedDelivery[]> {
  if (rows.length === 0) return [];
  return sql<CreatedDelivery[]>`
    with d as (
      insert into webhook_deliveries ${sql(rows, "webhook_integration_id", "event_id", "event_type", "message_id", "body", "origin")}
      returning id
    )
    ${enqueueJobs(sql, queue, sql`select jsonb_build_object('delivery_id', d.id) from d`)}
    returning (payload->>'delivery_id')::bigint as delivery_id, id as job_id`;
}

export async function findLog(sql: Sql, integrationId: number, logId: number) {
  const [row] = await sql<{ id: number; event_id: string; event_type: string; message_id: number | null }[]>`
    select id, event_id, event_type, message_id from webhook_delivery_logs where id = ${logId} and webhook_integration_id = ${integrationId}`;
  return row ?? null;
}

/** A replay of the integration whose deliveries have not all been tried yet. */
export async function hasPendingReplay(sql: Sql, integrationId: number): Promise<boolean> {
  const rows = await sql`
    select 1 from webhook_deliveries where webhook_integration_id = ${integrationId} and origin = 'replay' and status = 'pending' limit 1`;
  return rows.length > 0;
}
