import type { Caller } from "../auth/caller";
import type { Pool, Sql } from "../db/client";
import { AppError, notFound, validationFailed } from "../errors";
import { event } from "../events/catalog";
import { appendEvents, type NewEvent } from "../events/log";
import type { UnlockReason } from "../events/payloads";
import type { EventTail } from "../events/tail";
import type { JobHandler, JobQueue } from "../jobs/queue";
import { RetryAfter } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import { clearExpiredLock, releaseLock, type TakenLock, takeLock } from "./lock-store";
import { attachedOrganizations, findHostedSim, type HostedSimRow, lockedByOther, notATeam, teamBelongsTo } from "./store";

type EventDeps = { sql: Pool; events: Pick<EventTail, "notify">; clock: Clock };
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
    throw notATeam();
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
      // A lock that ran out and was not ended yet ends here: its `number.unlocked` (expired) comes
      // first, as its expiry job would have written it (that job now finds it gone).
      if (taken.ran_out) await appendEvents(tx, await unlockedEvents(tx, sim, "expired"));
      await appendEvents(tx, await lockedEvents(tx, sim, c.organization.id, taken));
    }
    return taken;
  });
  if (!lock) {
    const now = await findHostedSim(deps.sql, [c.organization.id], id);
    // Not attached any more (a proof took the number meanwhile): gone, as for any number not the caller's.
    if (!now) throw notFound("Number");
    throw numberLocked(now.locked_until);
  }
  deps.events.notify();
  return requireNumber(deps.sql, c, id);
}

export async function unlockNumber(deps: Deps, c: Caller, id: number) {
  const sim = await requireNumber(deps.sql, c, id);
  const released = await deps.sql.begin(async (tx) => {
    const done = await releaseLock(tx, id, c.organization.id, deps.clock.now());
    if (done) await appendEvents(tx, await unlockedEvents(tx, sim, "unlock"));
    return done;
  });
  if (!released) {
    const now = await requireNumber(deps.sql, c, id);
    // Someone else's live lock refuses; no lock at all is already the wanted state.
    if (lockedByOther(now, c.organization.id)) throw numberLocked(now.locked_until);
    return now;
  }
  deps.events.notify();
  return requireNumber(deps.sql, c, id);
}

/** `number.locked` per attached organization: the full lock for the holder's, `lock: null` for the others. */
async function lockedEvents(tx: Sql, sim: HostedSimRow, holder: number, lock: TakenLock): Promise<NewEvent[]> {
  const full = {
    organization_id: holder,
    team_id: lock.team_id,
    user_id: lock.user_id,
    locked_until: lock.locked_until,
    release_on_message: lock.release_on_message,
    sender: lock.sender,
  };
  return (await attachedOrganizations(tx, sim.id)).map((org) =>
    event.numberLocked(
      { organizationId: org, hostedSimId: sim.id, teamId: org === holder ? lock.team_id : null },
      { hosted_sim_id: sim.id, number: sim.number, locked: true, lock: org === holder ? full : null },
    ),
  );
}

/** `number.unlocked` per attached organization. */
async function unlockedEvents(tx: Sql, sim: Pick<HostedSimRow, "id" | "number">, reason: UnlockReason, dedupeKey?: string): Promise<NewEvent[]> {
  return (await attachedOrganizations(tx, sim.id)).map((org) =>
    event.numberUnlocked(
      { organizationId: org, hostedSimId: sim.id, dedupeKey },
      { hosted_sim_id: sim.id, number: sim.number, locked: false, lock: null, reason },
    ),
  );
}

/**
 * The `number.unlocked` events of locks that the inbound store ended because a message released
 * them (the inbound store appends them after that message's `message.received`, in its transaction).
 * The lock is already gone in the database: this only tells the attached organizations.
 * `dedupeKey` names a job that may run twice (absent: appended in the transaction that released them).
 */
export async function lockReleasedOnMessageEvents(tx: Sql, hostedSimIds: number[], dedupeKey?: string): Promise<NewEvent[]> {
  if (hostedSimIds.length === 0) return [];
  const sims = await tx<{ id: number; number: string }[]>`select id, number from hosted_sims where id = any(${hostedSimIds}::bigint[]) order by id`;
  const out: NewEvent[] = [];
  for (const sim of sims) out.push(...(await unlockedEvents(tx, sim, "released_on_message", dedupeKey === undefined ? undefined : `${dedupeKey}:${sim.id}`)));
  return out;
}

type ExpiryPayload = { hosted_sim_id: number; organization_id: number; locked_until: string };

/** Ends one lock at its time (unless extended or released since) and announces it. Exported for tests. */
export async function expireLock(deps: EventDeps, p: ExpiryPayload): Promise<"cleared" | "gone" | number> {
  const outcome = await deps.sql.begin(async (tx) => {
    const done = await clearExpiredLock(tx, p.hosted_sim_id, p.organization_id, p.locked_until, deps.clock.now());
    if (done === "cleared") {
      const [sim] = await tx<{ id: number; number: string }[]>`select id, number from hosted_sims where id = ${p.hosted_sim_id}`;
      if (sim) await appendEvents(tx, await unlockedEvents(tx, sim, "expired"));
    }
    return done;
  });
  if (outcome === "cleared") deps.events.notify();
  return outcome;
}

/** The handler of `number.lock-expiry` (registered by server/jobs/workers.ts). */
export function lockExpiryHandler(deps: EventDeps): JobHandler<ExpiryPayload> {
  return async (job) => {
    const outcome = await expireLock(deps, job.payload);
    if (typeof outcome === "number") throw new RetryAfter(outcome, "lock not run out yet");
  };
}
