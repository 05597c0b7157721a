import type { Sql } from "../db/client";
import type { Position } from "../events/cursor";
import { enqueueJobs } from "../jobs/queue";
import { type FinishedAttempt, type IntegrationForAttempt, outcomeColumns, recordFailureRuns } from "./delivery-store";

/**
 * Storage of the log consumer's first attempts (server/webhooks/consumer.ts): nothing is written
 * before a first attempt, only its outcome afterwards, many per statement; and the consumer's
 * position with its owner's lease (`event_consumers`).
 */

export async function loadIntegrationsForAttempt(sql: Sql, ids: number[], disableAfterSeconds: number): Promise<Map<number, IntegrationForAttempt>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<IntegrationForAttempt[]>`
    select id, url, headers, timeout_seconds, retry_count, is_active, secret_sealed,
           coalesce(failing_since <= now() - make_interval(secs => ${disableAfterSeconds}), false) as failing_too_long
    from webhook_integrations where id = any(${ids}::bigint[])`;
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * A live delivery's first attempt as recorded, with its body, which a delivery row keeps for the
 * job path's attempts (retries, and first attempts handed over). `attempt` 0 with status
 * `pending`: not attempted here but handed to the job path (its endpoint's lane was too long or
 * too slow, or the process is stopping).
 */
export type FirstAttempt = FinishedAttempt & { body: string };

/**
 * Records first attempts in one statement, however many. A first attempt that succeeded (nearly
 * all of them) is its log record alone: nothing is left to do for it, and a redelivery builds its
 * body again from the event log (replay.ts). Any other gets its delivery row as the attempt left
 * it (failed, retrying, or pending when handed over untried) with its body, its log record when
 * attempted, and a job for what is to be tried again (due at its retry, or now). The failure run
 * of each integration tried is updated as recordAttempts does. A row that exists already (the
 * event was read again after its consumer's owner died) keeps its state and gets only the log
 * record. The attempts of an integration deleted meanwhile are left out.
 */
export async function recordFirstAttempts(sql: Sql, attempts: FirstAttempt[]) {
  if (attempts.length === 0) return;
  const seen = new Set<string>();
  const rows: Record<string, unknown>[] = [];
  for (const r of attempts) {
    // One row per (event, integration) in a statement: ON CONFLICT DO UPDATE cannot touch a row twice.
    const key = `${r.eventId} ${r.integrationId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({ ...outcomeColumns(r), body: r.status === "succeeded" ? null : r.body });
  }
  // A record lost to a crash of PostgreSQL goes with the consumer position written after it (the
  // WAL is one sequence): the events are read again and attempted again under the same ids.
  // Only the attempts of integrations that still exist: one deleted meanwhile has no record to keep
  // (its rows would go with it). Its rows failed the whole statement on their foreign key, again at
  // every retry, holding up the records of every other organization's deliveries batched with them
  // and the consumer's position. (A delete committed while this statement runs fails it once; the
  // retry finds the integration gone. No row lock here: `f` below updates the same rows, and a row
  // this statement updates is one its lock would no longer see.)
  await sql`
    with r as materialized (
      select * from jsonb_to_recordset(${sql.json(rows as never)}) as r(integration_id bigint, event_id text, event_type text,
        message_id bigint, body text, attempt int, status text, http_status int, response_body text, response_time_ms int, error text,
        retry_at timestamptz)
      where exists (select 1 from webhook_integrations i where i.id = r.integration_id)
    ), d as (
      insert into webhook_deliveries (webhook_integration_id, event_id, event_type, message_id, body, origin, status, attempts)
      select integration_id, event_id, event_type, message_id, body, 'live', status, attempt from r where r.status <> 'succeeded'
      on conflict (event_id, webhook_integration_id) where origin = 'live' do update set updated_at = now()
      returning id, event_id, webhook_integration_id, (xmax = 0) as inserted
    ), l as (
      insert into webhook_delivery_logs (webhook_integration_id, delivery_id, event_id, event_type, message_id, attempt, status,
        http_status, response_body, response_time_ms, error, next_retry_at)
      select r.integration_id, d.id, r.event_id, r.event_type, r.message_id, r.attempt, r.status, r.http_status, r.response_body,
        r.response_time_ms, r.error, r.retry_at
      from r join d on d.event_id = r.event_id and d.webhook_integration_id = r.integration_id where r.attempt > 0
    ), succeeded as (
      insert into webhook_delivery_logs (webhook_integration_id, event_id, event_type, message_id, attempt, status, http_status,
        response_body, response_time_ms)
      select r.integration_id, r.event_id, r.event_type, r.message_id, r.attempt, r.status, r.http_status, r.response_body, r.response_time_ms
      from r where r.status = 'succeeded'
    ), j as (${enqueueJobs(
      sql,
      "webhook.delivery",
      sql`select jsonb_build_object('delivery_id', d.id), r.retry_at from r join d on d.event_id = r.event_id and d.webhook_integration_id = r.integration_id
          where d.inserted and r.status in ('retrying', 'pending')`,
      { runAt: "per-row" },
    )}), f as (${recordFailureRuns(sql, attempts)})
    select set_config('synchronous_commit', 'off', true)`;
}

/**
 * Takes the consumer `name` for `owner` under a lease of `leaseSeconds` (database time) when it is
 * free, lapsed or already `owner`'s; returns its durable position, or null when another owner
 * holds it.
 */
export async function claimConsumer(sql: Sql, name: string, owner: string, leaseSeconds: number): Promise<Position | null> {
  const [row] = await sql<{ txid: string; id: number }[]>`
    update event_consumers set owner = ${owner}, owner_until = now() + make_interval(secs => ${leaseSeconds})
    where name = ${name} and (owner is null or owner = ${owner} or owner_until < now())
    returning after_txid::text as txid, after_id as id`;
  return row ?? null;
}

/**
 * Renews `owner`'s lease and writes its position (`position` null: unchanged); false when it no
 * longer owns the consumer (its lease lapsed and another instance took it). Lost to a crash, it
 * only makes the next owner read again from an older position.
 */
export async function renewConsumer(sql: Sql, name: string, owner: string, leaseSeconds: number, position: Position | null): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`
    with c as (
      update event_consumers set owner_until = now() + make_interval(secs => ${leaseSeconds}), updated_at = now()
        ${position ? sql`, after_txid = ${position.txid}::xid8, after_id = ${position.id}` : sql``}
      where name = ${name} and owner = ${owner} returning 1)
    select (select count(*) from c)::int as n, set_config('synchronous_commit', 'off', true)`;
  return (row?.n ?? 0) > 0;
}

/** Writes the position and lets the consumer go, so another instance takes it at once. */
export async function releaseConsumer(sql: Sql, name: string, owner: string, position: Position | null) {
  await sql`
    update event_consumers set owner = null, owner_until = null, updated_at = now()
      ${position ? sql`, after_txid = ${position.txid}::xid8, after_id = ${position.id}` : sql``}
    where name = ${name} and owner = ${owner}`;
}
