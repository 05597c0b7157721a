import type { Caller } from "../auth/caller";
import type { Pool } from "../db/client";
import { AppError, notFound, validationFailed } from "../errors";
import type { JobHandler, JobQueue } from "../jobs/queue";
import { RetryAfter } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import type { Publish } from "../realtime/bus";
import { clearExpiredLock, releaseLock, type TakenLock, takeLock } from "./lock-store";
import { attachedOrganizations, findHostedSim, type HostedSimRow, teamBelongsTo } from "./store";

type EventDeps = { sql: Pool; publish: Publish; clock: Clock };
type Deps = EventDeps & { jobs: JobQueue };

export const numberLocked = (lockedUntil: string | null) =>
  new AppError(409, "number_locked", "Another organization holds the lock on this number.", { locked_until: lockedUntil });

/** 404 unless the organization the caller acts in is attached to the number (writes act in one organization). */
export async function requireNumber(sql: Pool, c: Caller, id: number): Promise<HostedSimRow> {
  const sim = await findHostedSim(sql, [c.organization.id], id);
  if (!sim) throw notFound("Number");
  return sim;
}

export type LockOptions = { duration_seconds?: number; team_id?: number; release_on_message?: boolean; sender?: string };

export async function lockNumber(deps: Deps, c: Caller, id: number, body: LockOptions) {
  // A sender only says which message releases the lock: without a release it would mean nothing.
  if (body.sender !== undefined && body.release_on_message !== true) {
    throw validationFailed({ sender: ["needs release_on_message: true (only messages from this sender release the lock)"] });
  }
  const sim = await requireNumber(deps.sql, c, id);
  if (body.team_id !== undefined && !(await teamBelongsTo(deps.sql, body.team_id, c.organization.id))) {
    throw validationFailed({ team_id: ["is not a team of your organization"] });
  }
  const lock = await deps.sql.begin(async (tx) => {
    const taken = await takeLock(tx, {
      hostedSimId: id,
      organizationId: c.organization.id,
      teamId: body.team_id ?? null,
      userId: c.user?.id ?? null,
      apiKeyId: c.apiKey?.id ?? null,
      durationSeconds: body.duration_seconds ?? 600,
      releaseOnMessage: body.release_on_message,
      sender: body.sender ?? null,
      at: deps.clock.now(),
    });
    if (taken) {
      const payload = { hosted_sim_id: id, organization_id: c.organization.id, locked_until: taken.locked_until };
      const delayMs = Math.max(0, Date.parse(taken.locked_until) - deps.clock.now());
      await deps.jobs.enqueue("number.lock-expiry", payload, { delayMs, dedupeKey: `lock-expiry:${id}:${taken.locked_until}` }, tx);
    }
    return taken;
  });
  if (!lock) {
    const now = await findHostedSim(deps.sql, [c.organization.id], id);
    throw numberLocked(now?.locked_until ?? sim.locked_until);
  }
  await publishLocked(deps, sim, c.organization.id, lock);
  return requireNumber(deps.sql, c, id);
}

export async function unlockNumber(deps: Deps, c: Caller, id: number) {
  const sim = await requireNumber(deps.sql, c, id);
  const released = await deps.sql.begin((tx) => releaseLock(tx, id, c.organization.id, deps.clock.now()));
  if (!released) {
    const now = await requireNumber(deps.sql, c, id);
    // Someone else's live lock refuses; no lock at all is already the wanted state.
    if (now.lock_live && now.lock_organization_id !== c.organization.id) throw numberLocked(now.locked_until);
    return now;
  }
  await publishUnlocked(deps, sim, "unlock");
  return requireNumber(deps.sql, c, id);
}

/** The full lock goes to the holder's organization; the others only learn that the number is locked. */
async function publishLocked(deps: EventDeps, sim: HostedSimRow, holder: number, lock: TakenLock) {
  const orgs = await attachedOrganizations(deps.sql, sim.id);
  const others = orgs.filter((o) => o !== holder);
  const full = {
    hosted_sim_id: sim.id,
    number: sim.number,
    locked: true,
    lock: {
      organization_id: holder,
      team_id: lock.team_id,
      user_id: lock.user_id,
      locked_until: lock.locked_until,
      release_on_message: lock.release_on_message,
      sender: lock.sender,
    },
  };
  const redacted = { hosted_sim_id: sim.id, number: sim.number, locked: true, lock: null };
  deps.publish(`private-number.${sim.id}`, "number.locked", full, { organizations: [holder] });
  deps.publish(`private-organization.${holder}`, "number.locked", full);
  if (others.length > 0) {
    deps.publish(`private-number.${sim.id}`, "number.locked", redacted, { organizations: others });
    deps.publish(
      others.map((o) => `private-organization.${o}`),
      "number.locked",
      redacted,
    );
  }
}

type UnlockReason = "unlock" | "expired" | "released_on_message";

async function publishUnlocked(deps: EventDeps, sim: Pick<HostedSimRow, "id" | "number">, reason: UnlockReason) {
  const orgs = await attachedOrganizations(deps.sql, sim.id);
  const data = { hosted_sim_id: sim.id, number: sim.number, locked: false, lock: null, reason };
  deps.publish(`private-number.${sim.id}`, "number.unlocked", data, { organizations: orgs });
  if (orgs.length > 0)
    deps.publish(
      orgs.map((o) => `private-organization.${o}`),
      "number.unlocked",
      data,
    );
}

/**
 * Announces locks that the inbound store ended because a message released them (the fan-out
 * job calls this after that message's deliveries and events). The lock is already gone in the
 * database: this only tells the attached organizations.
 */
export async function announceLocksReleasedOnMessage(deps: EventDeps, hostedSimIds: number[]) {
  if (hostedSimIds.length === 0) return;
  const sims = await deps.sql<{ id: number; number: string }[]>`select id, number from hosted_sims where id = any(${hostedSimIds}::bigint[]) order by id`;
  for (const sim of sims) await publishUnlocked(deps, sim, "released_on_message");
}

type ExpiryPayload = { hosted_sim_id: number; organization_id: number; locked_until: string };

/** Ends one lock at its time (unless extended or released since) and announces it. Exported for tests. */
export async function expireLock(deps: EventDeps, p: ExpiryPayload): Promise<"cleared" | "gone" | number> {
  const outcome = await deps.sql.begin((tx) => clearExpiredLock(tx, p.hosted_sim_id, p.organization_id, p.locked_until, deps.clock.now()));
  if (outcome === "cleared") {
    const [sim] = await deps.sql<{ id: number; number: string }[]>`select id, number from hosted_sims where id = ${p.hosted_sim_id}`;
    if (sim) await publishUnlocked(deps, sim, "expired");
  }
  return outcome;
}

/** The handler of `number.lock-expiry` (registered by server/jobs/workers.ts). */
export function lockExpiryHandler(deps: EventDeps): JobHandler<ExpiryPayload> {
  return async (job) => {
    const outcome = await expireLock(deps, job.payload);
    if (typeof outcome === "number") throw new RetryAfter(outcome, "lock not run out yet");
  };
}
