import type postgres from "postgres";
import type { Pool } from "../db/client";
import type { Clock } from "../lib/clock";
import type { Publish } from "../realtime/bus";
import type { DeviceActors } from "./actor";
import { deviceChannels } from "./runtime";
import { enqueueDeviceSmsProcessing } from "./sms-store";
import { isUniqueViolation } from "./store";
import { nextDeviceStatus } from "./transitions";

type Tx = postgres.TransactionSql;

export type VerificationOutcome = "verified" | "unknown_code" | "expired" | "number_in_use" | "duplicate";

type Deps = { sql: Pool; clock: Clock; actors: DeviceActors; publish: Publish };

async function cardByCode(sql: Pool | Tx, code: string, lock: boolean) {
  const [row] = await sql<{ id: number; device_id: number; organization_id: number; status: string; sim_slot: number | null; code_expires_at: Date | null }[]>`
    select c.id, c.device_id, d.organization_id, c.status, c.sim_slot, c.code_expires_at
    from sim_cards c join devices d on d.id = c.device_id
    where c.verification_code = ${code} and d.status <> 'revoked' ${lock ? sql`for update of c, d` : sql``}`;
  return row ?? null;
}

/**
 * The virtual hosted SIM of a verified number: created, or re-linked when the number was BYOS
 * before (a revoked device's SIM). A number the pool holds under another type is not taken.
 */
async function linkHostedSim(tx: Tx, number: string, organizationId: number) {
  const [sim] = await tx<{ id: number }[]>`
    insert into hosted_sims (number, provider, status, type, shared_max_orgs) values (${number}, 'byos', 'active', 'virtual', 1)
    on conflict (number) do update set status = 'active', updated_at = now()
      where hosted_sims.type = 'virtual' and hosted_sims.provider = 'byos'
    returning id`;
  if (!sim) return null;
  // shared_max_orgs 1: the organization that proved it holds the SIM is its only one.
  await tx`delete from hosted_sim_organizations where hosted_sim_id = ${sim.id} and organization_id <> ${organizationId}`;
  await tx`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${sim.id}, ${organizationId}) on conflict do nothing`;
  return sim.id;
}

async function verifyInTx(tx: Tx, code: string, from: string, now: Date) {
  const card = await cardByCode(tx, code, true);
  if (!card || card.status === "active") return { outcome: "unknown_code" as const };
  if (!card.code_expires_at || card.code_expires_at <= now) return { outcome: "expired" as const };
  const [inUse] = await tx`select 1 from sim_cards where phone_number = ${from} and status = 'active'`;
  if (inUse) return { outcome: "number_in_use" as const };
  const hostedSimId = await linkHostedSim(tx, from, card.organization_id);
  if (hostedSimId === null) return { outcome: "number_in_use" as const };
  await tx`
    update sim_cards set phone_number = ${from}, status = 'active', hosted_sim_id = ${hostedSimId},
      verification_code = null, code_expires_at = null, updated_at = now()
    where id = ${card.id}`;
  const [device] = await tx<{ status: "pending_verification" | "active" | "disabled" | "revoked"; config_version: number }[]>`
    select status, config_version from devices where id = ${card.device_id}`;
  const status = nextDeviceStatus(device!.status, "verify") ?? device!.status;
  await tx`
    update devices set status = ${status}, phone_number = coalesce(phone_number, ${from}), config_version = config_version + 1, updated_at = now()
    where id = ${card.device_id}`;
  await enqueueDeviceSmsProcessing(tx, card.device_id);
  return { outcome: "verified" as const, card, hostedSimId, status, configVersion: device!.config_version + 1 };
}

/**
 * API.md verification: the SMS carrying a pending code proves the sender's number is that SIM's.
 * Serialised on the device's actor; everything (card, hosted SIM, device, the job that releases
 * the SMS that waited for this SIM, and the caller's `guard` such as the provider's MessageSid)
 * commits together.
 */
export async function verifySimCard(deps: Deps, code: string, from: string, guard: (tx: Tx) => Promise<boolean>): Promise<VerificationOutcome> {
  const found = await cardByCode(deps.sql, code, false);
  const state = found ? await deps.actors.get(found.device_id) : null;
  if (!found || !state) return (await deps.sql.begin((tx) => guard(tx))) ? "unknown_code" : "duplicate";
  return deps.actors.run(state, async () => {
    const result = await deps.sql
      .begin(async (tx) => {
        if (!(await guard(tx))) return { outcome: "duplicate" as const };
        return verifyInTx(tx, code, from, new Date(deps.clock.now()));
      })
      .catch((e) => {
        // Another card took the same number at the same moment (sim_cards_active_number_key).
        if (isUniqueViolation(e)) return { outcome: "number_in_use" as const };
        throw e;
      });
    if (result.outcome !== "verified") return result.outcome;
    state.status = result.status;
    const channels = deviceChannels(state);
    deps.publish(channels, "sim.verified", {
      device_id: state.id,
      sim_card: { id: result.card.id, sim_slot: result.card.sim_slot, phone_number: from, status: "active", hosted_sim_id: result.hostedSimId },
      hosted_sim_id: result.hostedSimId,
      device_status: result.status,
    });
    deps.publish(`private-device.${state.id}`, "config.changed", { device_id: state.id, config_version: result.configVersion });
    return "verified";
  });
}
