import type { Caller } from "../auth/caller";
import type { Pool, Sql } from "../db/client";
import { AppError, notFound } from "../errors";
import {
  attachOrganization,
  freePoolCandidates,
  isOwnVerifiedByosNumber,
  lockHostedSimRow,
  notATeam,
  seatsOf,
  sharedCandidates,
  teamBelongsTo,
  upsertVirtualAttachment,
} from "./store";

export type ClaimBody = { hosted_sim_id?: number; team_id?: number; alias?: string | null };

const poolExhausted = (message: string) => new AppError(409, "pool_exhausted", message);
const sharedFull = () => new AppError(409, "shared_number_full", "This shared number already has its maximum number of organizations.");
const alreadyClaimed = () => new AppError(409, "already_claimed", "Your organization already has this number.");

async function checkTeam(sql: Sql, c: Caller, teamId: number | undefined) {
  // Deleted after this check, the team fails the attachment's insert with the same 422 (store.ts attachOrganization).
  if (teamId !== undefined && !(await teamBelongsTo(sql, teamId, c.organization.id))) throw notATeam();
}

const attachment = (c: Caller, body: ClaimBody) => ({ organizationId: c.organization.id, teamId: body.team_id ?? null, alias: body.alias ?? null });

/**
 * Attaches the organization to a shared number if a seat is free. Every attachment locks the
 * hosted_sims row first, so the count read here cannot change before the insert: two
 * organizations racing for the last seat are served one after the other.
 */
async function takeSeat(tx: Sql, c: Caller, id: number, body: ClaimBody, requireOwned: boolean): Promise<"ok" | "full" | "mine" | "absent" | "unowned"> {
  const sim = await lockHostedSimRow(tx, id);
  if (sim?.type !== "shared" || sim.status !== "active") return "absent";
  const seats = await seatsOf(tx, id, c.organization.id);
  if (seats.mine) return "mine";
  if (requireOwned && seats.taken === 0) return "unowned";
  if (seats.taken >= sim.shared_max_orgs) return "full";
  await attachOrganization(tx, id, attachment(c, body));
  return "ok";
}

/**
 * The first candidate `take` gets, trying each in its own short transaction (a request never holds
 * two number rows at once: no deadlock between concurrent claims), and reading candidates again
 * while a read finds any not tried yet: concurrent requests read the same first candidates, and
 * when those were all taken the pool may still have room (before, the 21st of 25 concurrent orders
 * answered pool_exhausted with numbers free). Each candidate is tried once, so this ends.
 */
async function firstTaken(read: (tried: number[]) => Promise<number[]>, take: (id: number) => Promise<boolean>): Promise<number | null> {
  const tried: number[] = [];
  for (let ids = await read(tried); ids.length > 0; ids = await read(tried)) {
    for (const id of ids) {
      if (await take(id)) return id;
      tried.push(id);
    }
  }
  return null;
}

/** POST /api/numbers/order: a free pool number (no organization yet) for the caller's organization; one taken meanwhile is skipped. */
export async function orderNumber(sql: Pool, c: Caller, body: ClaimBody): Promise<number> {
  await checkTeam(sql, c, body.team_id);
  const id = await firstTaken(
    (tried) => freePoolCandidates(sql, 20, tried),
    (id) =>
      sql.begin(async (tx) => {
        const sim = await lockHostedSimRow(tx, id);
        if (sim?.type !== "shared" || sim.status !== "active") return false;
        if ((await seatsOf(tx, id, c.organization.id)).taken > 0) return false;
        await attachOrganization(tx, id, attachment(c, body));
        return true;
      }),
  );
  if (id === null) throw poolExhausted("No free number is left in the pool.");
  return id;
}

/** POST /api/numbers/claim-shared: a named shared number, or the one with the fewest organizations that has room. */
export async function claimShared(sql: Pool, c: Caller, body: ClaimBody): Promise<number> {
  await checkTeam(sql, c, body.team_id);
  const named = body.hosted_sim_id;
  if (named !== undefined) {
    const outcome = await sql.begin((tx) => takeSeat(tx, c, named, body, false));
    if (outcome === "absent" || outcome === "unowned") throw notFound("Number");
    if (outcome === "mine") throw alreadyClaimed();
    if (outcome === "full") throw sharedFull();
    return named;
  }
  const id = await firstTaken(
    (tried) => sharedCandidates(sql, c.organization.id, 20, tried),
    async (id) => (await sql.begin((tx) => takeSeat(tx, c, id, body, true))) === "ok",
  );
  if (id === null) throw poolExhausted("No shared number has room for another organization.");
  return id;
}

/** POST /api/numbers/claim-virtual: the organization's own verified BYOS number, assigned to a team. */
export async function claimVirtual(sql: Pool, c: Caller, body: ClaimBody & { hosted_sim_id: number }): Promise<number> {
  await checkTeam(sql, c, body.team_id);
  const id = body.hosted_sim_id;
  await sql.begin(async (tx) => {
    const sim = await lockHostedSimRow(tx, id);
    if (sim?.type !== "virtual" || !(await isOwnVerifiedByosNumber(tx, c.organization.id, id))) throw notFound("Number");
    if (sim.status !== "active") throw new AppError(409, "invalid_state", "This number is inactive.");
    const seats = await seatsOf(tx, id, c.organization.id);
    if (!seats.mine && seats.taken >= sim.shared_max_orgs) throw sharedFull();
    await upsertVirtualAttachment(tx, id, { organizationId: c.organization.id, teamId: body.team_id, alias: body.alias });
  });
  return id;
}
