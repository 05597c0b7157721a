import type { Sql } from "../db/client";
import { countInboundOnNumbers, lockInboundNumbers } from "../numbers/byos-store";
import { extractCode } from "./code";
import { announceInbound } from "./fanout";

export type InboundInput = {
  hostedSimId: number;
  from: string;
  text: string;
  source: "provider" | "device";
  deviceId?: number | null;
  simSlot?: number | null;
  externalId?: string | null;
  receivedAt: Date;
};

export type StoredInbound = {
  messageId: number;
  hostedSimId: number;
  /** Organizations that may see the message, with their team on the number at arrival. */
  visibility: { organizationId: number; teamId: number | null }[];
  locked: boolean;
};

/**
 * Stores inbound SMS on hosted SIMs, any number of them in one statement, and stamps, once and
 * for good, who may see each (API.md "Lock meaning"): the lock holder's organization alone while
 * a lock is live, otherwise every organization attached right now (a lock that releases on a
 * message covers the batch up to and including the message that releases it: numbers/'
 * countInboundOnNumbers decides), with the history counts and seqs of each organization's view of
 * the number updated once per batch. Counts them on their numbers (one update per number, however
 * many messages it got: numbers/ owns that part of the statement, countInboundOnNumbers). Then
 * announces them in the same transaction (fanout.ts: `message.received`, and `number.unlocked`
 * for the locks they released), so nothing is announced that was not stored and nothing stored
 * goes unannounced; the caller notifies the event tail (`services.events.notify()`) after its
 * commit. Each message's one-time code (code.ts) is extracted here, in JavaScript, and stored
 * with it (and flagged on its visibility rows for `has_code`). Message ids follow the order of
 * `inputs` and, on each number, the order in which they commit; the answer is in that order too,
 * null where the hosted SIM does not exist.
 */
export async function storeInboundMessages(tx: Sql, inputs: InboundInput[]): Promise<(StoredInbound | null)[]> {
  if (inputs.length === 0) return [];
  const rows = inputs.map((i, ord) => ({
    ord,
    hosted_sim_id: i.hostedSimId,
    from_number: i.from,
    body: i.text,
    source: i.source,
    device_id: i.deviceId ?? null,
    sim_slot: i.simSlot ?? null,
    external_id: i.externalId ?? null,
    received_at: i.receivedAt.toISOString(),
    code: extractCode(i.text),
  }));
  // The numbers' rows are locked by a statement of their own, before the one that draws the
  // messages' ids: drawn first, a batch waiting on one of its numbers would hold ids below those
  // of SMS committed meanwhile on its other numbers, and `after=<id>` (messages/next, history)
  // would skip or repeat messages. Locked here, a number's messages take their ids in the order
  // they commit, and the statement's snapshot, taken after the wait, reads the attachments as
  // whoever held a number left them (a proof that just moved it). It costs one round trip per
  // batch: 3 to 22 % of a single provider SMS's store on PostgreSQL (docs/benchmarks.md).
  await lockInboundNumbers(tx, [...new Set(rows.map((r) => r.hosted_sim_id))]);
  const stored = await tx<
    { ord: number; message_id: number; hosted_sim_id: number; locked: boolean; released: number[] | null; visibility: StoredInbound["visibility"] }[]
  >`
    with input as (
      select v.*, nextval(pg_get_serial_sequence('messages', 'id')) as message_id
      from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as v(ord int, hosted_sim_id bigint, from_number text, body text,
        source text, device_id bigint, sim_slot int, external_id text, received_at timestamptz, code text)),
    ${countInboundOnNumbers(tx)},
    msgs as (
      insert into messages (id, hosted_sim_id, number, direction, from_number, to_number, text, status, source,
                            device_id, sim_slot, external_id, team_id, locked, received_at, code)
      overriding system value
      select i.message_id, i.hosted_sim_id, s.number, 'inbound', i.from_number, s.number, i.body, 'received', i.source,
             i.device_id, i.sim_slot, i.external_id, case when a.under_lock then s.lock_team_id end, a.under_lock, i.received_at, i.code
      from input i join sims s on s.id = i.hosted_sim_id join arrivals a on a.ord = i.ord
      order by i.ord
      returning id),
    -- Who may see each message, in message order.
    seen as (
      select o.organization_id, i.hosted_sim_id, i.message_id, o.team_id, i.code is not null as has_code,
             row_number() over (partition by o.organization_id, i.hosted_sim_id order by i.ord) as k
      from input i join sims s on s.id = i.hosted_sim_id join arrivals a on a.ord = i.ord
      cross join lateral (
        select s.lock_organization_id as organization_id, s.lock_team_id as team_id where a.under_lock
        union all
        select hso.organization_id, hso.team_id from hosted_sim_organizations hso where hso.hosted_sim_id = i.hosted_sim_id and not a.under_lock) o),
    -- Each (organization, number) view counts its new messages once for the batch and hands out
    -- their seqs (0021's keyset pages) as one range; the insert below gives seq, so the per-row
    -- trigger leaves the counts alone.
    views as (select organization_id, hosted_sim_id, count(*) as n from seen group by organization_id, hosted_sim_id),
    counted as (
      insert into message_visibility_counts as c (organization_id, hosted_sim_id, last_seq, total, inbound)
      select organization_id, hosted_sim_id, n, n, n from views order by organization_id, hosted_sim_id
      on conflict (organization_id, hosted_sim_id) do update
        set last_seq = c.last_seq + excluded.last_seq, total = c.total + excluded.total, inbound = c.inbound + excluded.inbound
      returning organization_id, hosted_sim_id, last_seq),
    vis as (
      insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id, seq, has_code)
      select v.organization_id, v.hosted_sim_id, v.message_id, v.team_id, c.last_seq - w.n + v.k, v.has_code
      from seen v
      join views w on w.organization_id = v.organization_id and w.hosted_sim_id = v.hosted_sim_id
      join counted c on c.organization_id = v.organization_id and c.hosted_sim_id = v.hosted_sim_id
      order by v.message_id, v.organization_id
      returning message_id, organization_id, team_id),
    -- Grouped once and joined: a subquery per row would scan every row of the batch's visibility for each message.
    visible as (
      select message_id, jsonb_agg(jsonb_build_object('organizationId', organization_id, 'teamId', team_id) order by organization_id) as visibility
      from vis group by message_id),
    released as (select jsonb_agg(hosted_sim_id order by hosted_sim_id) as released from releases)
    select i.ord, i.message_id, i.hosted_sim_id, a.under_lock as locked, r.released, coalesce(w.visibility, '[]') as visibility
    from input i join arrivals a on a.ord = i.ord left join visible w on w.message_id = i.message_id cross join released r`;
  await announceInbound(
    tx,
    stored.map((r) => r.message_id).sort((a, b) => a - b),
    stored[0]?.released ?? [],
  );
  const byOrd = new Map(stored.map((r) => [r.ord, r]));
  return rows.map(({ ord }) => {
    const r = byOrd.get(ord);
    return r ? { messageId: r.message_id, hostedSimId: r.hosted_sim_id, visibility: r.visibility, locked: r.locked } : null;
  });
}

/** One inbound SMS: storeInboundMessages for a batch of one. Call inside a transaction. */
export async function storeInboundMessage(tx: Sql, input: InboundInput): Promise<StoredInbound | null> {
  const [stored] = await storeInboundMessages(tx, [input]);
  return stored ?? null;
}
