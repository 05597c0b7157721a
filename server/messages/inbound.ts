import type { Sql } from "../db/client";

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

/** Queue that turns a stored inbound message into events and webhook deliveries. */
export const INBOUND_FANOUT_QUEUE = "message.inbound";

/**
 * Stores one inbound SMS on a hosted SIM and stamps, once and for good, who may see it
 * (API.md "Lock meaning"): the lock holder's organization alone while a lock is live, otherwise
 * every organization attached right now. Counts it on the number, and enqueues the fan-out job
 * (events, webhooks) in the same transaction, so nothing is announced that was not stored and
 * nothing stored goes unannounced. Call inside a transaction.
 */
export async function storeInboundMessage(tx: Sql, input: InboundInput): Promise<StoredInbound | null> {
  const [sim] = await tx<{ number: string; lock_organization_id: number | null; lock_team_id: number | null; lock_live: boolean }[]>`
    update hosted_sims set messages_received_count = messages_received_count + 1, updated_at = now()
    where id = ${input.hostedSimId}
    returning number, lock_organization_id, lock_team_id, (locked_until is not null and locked_until > now()) as lock_live`;
  if (!sim) return null;
  const locked = sim.lock_live && sim.lock_organization_id !== null;
  const [message] = await tx<{ id: number }[]>`
    insert into messages (hosted_sim_id, number, direction, from_number, to_number, text, status, source,
                          device_id, sim_slot, external_id, team_id, locked, received_at)
    values (${input.hostedSimId}, ${sim.number}, 'inbound', ${input.from}, ${sim.number}, ${input.text}, 'received', ${input.source},
            ${input.deviceId ?? null}, ${input.simSlot ?? null}, ${input.externalId ?? null},
            ${locked ? sim.lock_team_id : null}, ${locked}, ${input.receivedAt})
    returning id`;
  const visibility = locked
    ? await tx<{ organizationId: number; teamId: number | null }[]>`
        insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id)
        values (${sim.lock_organization_id}, ${input.hostedSimId}, ${message!.id}, ${sim.lock_team_id})
        returning organization_id as "organizationId", team_id as "teamId"`
    : await tx<{ organizationId: number; teamId: number | null }[]>`
        insert into message_visibility (organization_id, hosted_sim_id, message_id, team_id)
        select organization_id, hosted_sim_id, ${message!.id}, team_id
        from hosted_sim_organizations where hosted_sim_id = ${input.hostedSimId}
        returning organization_id as "organizationId", team_id as "teamId"`;
  await tx`insert into jobs (queue, payload) values (${INBOUND_FANOUT_QUEUE}, ${tx.json({ message_id: message!.id })})`;
  return { messageId: message!.id, hostedSimId: input.hostedSimId, visibility, locked };
}
