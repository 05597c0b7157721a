import type postgres from "postgres";
import { isDatabaseUnavailable, type Pool, type Sql } from "../db/client";
import { type Clock, systemClock, type Timer } from "../lib/clock";
import type { Logger } from "../lib/logger";
import { singleFlight } from "../lib/single-flight";
import { DEFAULT_CONCURRENCY, DEFAULT_MAX_ATTEMPTS, DEFAULT_VISIBILITY_SECONDS, QUEUES, type QueueName, type QueueSpec, queueSpec } from "./registry";

export type Job<P = Record<string, unknown>> = { id: number; queue: string; payload: P; attempts: number; max_attempts: number };
/**
 * A handler that settled its own job row (settleJobs) in the statement that recorded its outcome returns
 * JOB_REMOVED, which saves the queue the delete (a statement per job) that would find nothing.
 */
export const JOB_REMOVED = Symbol("job removed");

/**
 * The table the queue churns: every job is deleted when it is done. On the embedded database (no
 * autovacuum) the hourly clean-up vacuums it (server/maintenance/retention.ts): unvacuumed, an
 * empty queue's poll there took 0.5 ms, and 7.3 ms after 200,000 jobs (its table 18 MB).
 */
export const QUEUE_TABLE = "jobs";
/** What a handler settles with: nothing, or JOB_REMOVED. */
// biome-ignore lint/suspicious/noConfusingVoidType: handlers that return nothing are typed Promise<void>; `undefined` here would refuse them.
export type JobOutcome = void | typeof JOB_REMOVED;
export type JobHandler<P = Record<string, unknown>> = (job: Job<P>) => Promise<JobOutcome>;

/** Thrown by a handler to be retried after a specific delay (e.g. a Retry-After answer). */
export class RetryAfter extends Error {
  constructor(
    readonly delayMs: number,
    message = "retry later",
  ) {
    super(message);
  }
}
/** Thrown by a handler whose job can never succeed: it is marked dead at once. */
export class GiveUp extends Error {}

/**
 * A handler of several jobs of its queue at once. A call that throws fails all of them; the
 * queue then runs them again in halves (see `attempt`), so one job that cannot succeed fails alone.
 */
export type BatchHandler<P = Record<string, unknown>> = (jobs: Job<P>[]) => Promise<void>;

type Registration = {
  /** Runs one claimed batch (a single job unless the queue was registered with registerBatch). */
  run: (jobs: Job[]) => Promise<JobOutcome>;
  batchSize: number;
  concurrency: number;
  visibilitySeconds: number;
  backoff: (attempt: number) => number;
  running: number;
};

/** What the registry cannot hold: a backoff that depends on configuration. */
type RegisterOptions = { backoff?: (attempt: number) => number };

/** `runAt` (an absolute due time, e.g. a scheduled send's send_at) wins over `delayMs`. */
export type EnqueueOptions = { delayMs?: number; runAt?: Date; dedupeKey?: string; maxAttempts?: number };

/** What one run of a handler came to: done (or removed by the handler itself), or failed. */
type Outcome = { jobs: Job[]; removed?: boolean; failed?: { error: unknown } };

/** Failures recorded alike: the same kind (give up, retry after a delay, other) and message. */
function describeFailure(error: unknown): string {
  const kind = error instanceof GiveUp ? "give-up" : error instanceof RetryAfter ? `after ${error.delayMs}` : "error";
  return `${kind}:${error instanceof Error ? error.message : String(error)}`;
}

const defaultBackoff = (attempt: number) => Math.min(5_000 * 2 ** (attempt - 1), 600_000) * (0.8 + Math.random() * 0.4);

/**
 * The part of a statement that enqueues jobs of `queue`: `insert into jobs ... select` one job
 * per row of `payloads`, a query whose one column is the job's jsonb payload. For features that
 * store their data and its jobs in one statement (one round trip, one commit), as a CTE
 * (`job as (${enqueueJobs(sql, "device_sms.process", sql`select ... from inserted`)})`) or as the
 * statement itself (a `returning` clause may follow). The only other way into `jobs` is
 * `enqueue`. The jobs are due at once: their `run_at` is the database's `now()` (the
 * transaction's start), and claims take the later of that clock and the queue's (see below).
 */
export function enqueueJobs(sql: Sql, queue: QueueName, payloads: postgres.Fragment, o: { runAt?: Date | "per-row" } = {}): postgres.Fragment {
  const spec = queueSpec(QUEUES, queue);
  const maxAttempts = spec.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  // `runAt` "per-row": `payloads` selects (payload, run_at), each job due at its own time, or at
  // once where run_at is null (the pacer's wake-ups of many SIMs, webhook first attempts recorded with their retries).
  if (o.runAt === "per-row")
    return sql`insert into jobs (queue, payload, max_attempts, run_at)
      select ${queue}, p.payload, ${maxAttempts}, coalesce(p.run_at, now()) from (${payloads}) as p(payload, run_at)`;
  // `runAt`: every job of the statement is due then instead (a bulk send's scheduled dispatch, its device timeout).
  if (o.runAt)
    return sql`insert into jobs (queue, payload, max_attempts, run_at) select ${queue}, p.payload, ${maxAttempts}, ${o.runAt}::timestamptz from (${payloads}) as p(payload)`;
  return sql`insert into jobs (queue, payload, max_attempts) select ${queue}, p.payload, ${maxAttempts} from (${payloads}) as p(payload)`;
}

/**
 * The part of a statement that settles jobs in hand, for a handler that then returns JOB_REMOVED:
 * `done`, a query of job ids, are removed; `later`, a query of (id, run_at), are released to run
 * again then.
 */
export function settleJobs(sql: Sql, done: postgres.Fragment, later: postgres.Fragment): postgres.Fragment {
  return sql`jd as (delete from jobs where id in (${done})),
    jl as (update jobs set locked_by = null, locked_until = null, run_at = l.run_at from (${later}) as l(id, run_at) where jobs.id = l.id)`;
}

/**
 * The durable job queue: rows in `jobs`, claimed with FOR UPDATE SKIP LOCKED. A claimed job is
 * invisible until `locked_until`; a worker that crashes leaves it to be claimed again then, so
 * every job runs at least once. Workers wake on a local enqueue or a short poll.
 *
 * `locked_until` is a short lease the worker renews while the handler runs (up to the queue's
 * visibility timeout), so the jobs of a crashed instance are free again within a lease, not
 * after the longest attempt a queue allows (3 minutes for webhooks).
 *
 * Only the queues of the registry (server/jobs/registry.ts, or `queues` in tests) may be
 * enqueued or registered, with the options the registry gives them. Due times (`run_at`) are the
 * clock's: a delay or a retry is the clock's now plus the delay, and a job is due once the
 * clock has passed its `run_at`, so a fake clock drives delays, retries and polling. A claim
 * looks at the later of the clock and the database's `now()`: jobs inserted by an
 * `enqueueJobs` statement carry the database's time, and a fake clock behind it must not hold
 * them back (with the system clock the two agree). Leases (`locked_until`) stay on the
 * database's clock: they only arbitrate between instances. So does what waits on them: a lease
 * lapses in real time, and a poll that failed (the database away or busy) is tried again in real
 * time, so a queue on a clock that stands still still finds both (see `watch`).
 */
export function createJobQueue<Q extends string = QueueName>(opts: {
  sql: Pool;
  logger: Logger;
  workerId: string;
  clock?: Clock;
  pollMs?: number;
  leaseSeconds?: number;
  queues?: Readonly<Record<Q, QueueSpec>>;
}) {
  const { sql, logger, workerId } = opts;
  const clock = opts.clock ?? systemClock;
  /**
   * The database's clock: leases, their renewal, and the waits for the database (a failed poll,
   * an outcome to record) run on real time whatever `clock` is; due times (`run_at`) are `clock`'s.
   */
  const real = systemClock;
  const queues: Readonly<Record<string, QueueSpec>> = opts.queues ?? QUEUES;
  const pollMs = opts.pollMs ?? 250;
  const leaseSeconds = opts.leaseSeconds ?? 15;
  /** Jobs in hand: since when (real ms), under which registration. */
  const held = new Map<number, { since: number; reg: Registration }>();
  let renewer: Timer | undefined;
  const registrations = new Map<string, Registration>();
  let timer: Timer | undefined;
  /** Real-time timers: the retry of a failed poll, the watch for lapsed leases. */
  let retry: Timer | undefined;
  let watch: Timer | undefined;
  let running = false;
  const inFlight = new Set<Promise<void>>();

  const at = (delayMs: number) => new Date(clock.now() + Math.max(0, delayMs));
  /** The time claims compare due times with (see above). */
  const dueBy = (sql: Sql) => sql`greatest(now(), ${at(0)}::timestamptz)`;

  async function enqueue(queue: Q, payload: Record<string, unknown>, o: EnqueueOptions = {}, tx: Sql = sql) {
    const spec = queueSpec(queues, queue);
    await tx`
      insert into jobs (queue, payload, run_at, max_attempts, dedupe_key)
      values (${queue}, ${tx.json(payload as never)}, ${o.runAt ?? at(o.delayMs ?? 0)}, ${o.maxAttempts ?? spec.maxAttempts ?? DEFAULT_MAX_ATTEMPTS}, ${o.dedupeKey ?? null})
      on conflict (dedupe_key) do nothing`;
    if (tx === sql) wake();
  }

  /**
   * Claims due jobs of every queue with a free slot, up to each one's `n`, in one statement: a
   * poll is one round trip however many queues the instance handles (it was one per queue, and
   * every finished batch wakes a poll). Each queue's jobs are taken oldest first by its own index
   * scan (`jobs_ready_idx`), rows another claim holds skipped; they come back oldest first.
   *
   * The queue's own bookkeeping (claims, outcomes) commits without waiting for the WAL flush: one
   * lost to a crash only means a job runs again, which at-least-once allows. Enqueues are not
   * covered: they commit with the work that made them.
   */
  async function claim(wanted: { queue: string; reg: Registration; n: number }[]): Promise<Job[]> {
    return sql<Job[]>`
      with wanted as (
        select * from unnest(${wanted.map((w) => w.queue)}::text[], ${wanted.map((w) => w.n)}::int[],
          ${wanted.map((w) => Math.min(w.reg.visibilitySeconds, leaseSeconds))}::float8[]) as w(queue, n, lease)),
      picked as (
        select j.id from wanted w cross join lateral (
          select id from jobs
          where queue = w.queue and not dead and run_at <= ${dueBy(sql)} and (locked_until is null or locked_until < now())
          order by run_at, id limit w.n for update skip locked) j),
      claimed as (
        update jobs set attempts = attempts + 1, locked_by = ${workerId}, locked_until = now() + make_interval(secs => w.lease)
        from wanted w where jobs.id = any(array(select id from picked)) and w.queue = jobs.queue
        returning jobs.id, jobs.queue, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.run_at)
      select c.id, c.queue, c.payload, c.attempts, c.max_attempts
      from claimed c, (select set_config('synchronous_commit', 'off', true)) as off
      order by c.run_at, c.id`;
  }

  async function finish(jobs: Job[], reg: Registration, error?: unknown) {
    const ids = jobs.map((j) => j.id);
    if (!error) {
      await sql`
        with done as (delete from jobs where id = any(${ids}::bigint[]) and locked_by = ${workerId})
        select set_config('synchronous_commit', 'off', true)`;
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    const giveUp = error instanceof GiveUp;
    const delay = error instanceof RetryAfter ? error.delayMs : reg.backoff(Math.max(...jobs.map((j) => j.attempts)));
    for (const job of jobs) {
      if (giveUp || job.attempts >= job.max_attempts) logger.warn({ job: job.id, queue: job.queue, attempts: job.attempts, err: message }, "job gave up");
    }
    // A dead job's run_at is when it died (server/jobs/dead-jobs.ts shows it), a live one's its next try.
    const dies = sql`(${giveUp} or attempts >= max_attempts)`;
    await sql`
      update jobs set locked_until = null, locked_by = null, last_error = ${message.slice(0, 1000)}, dead = ${dies},
        run_at = case when ${dies} then ${at(0)} else ${at(delay)} end
      where id = any(${ids}::bigint[]) and locked_by = ${workerId}`;
  }

  /**
   * Records the outcome, retrying while the database is away: a job whose outcome is lost stays
   * invisible for its whole visibility timeout (minutes for webhooks) after the database returns.
   */
  async function settle(jobs: Job[], reg: Registration, error: unknown) {
    const deadline = real.now() + reg.visibilitySeconds * 1000;
    for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
      try {
        return await finish(jobs, reg, error);
      } catch (e) {
        if (!running || real.now() + wait >= deadline) throw e;
        await new Promise((resolve) => real.setTimeout(() => resolve(undefined), wait));
      }
    }
  }

  /** Extends the leases of the jobs in hand that have not yet run past their visibility timeout. */
  async function renewLeases() {
    const now = real.now();
    const ids = [...held].filter(([, h]) => now - h.since < h.reg.visibilitySeconds * 1000 - leaseSeconds * 1000).map(([id]) => id);
    if (ids.length === 0) return;
    try {
      // Rows locked right now are being settled by their holder: skipped, so a renewal never waits
      // on (or deadlocks with) the statements that record many outcomes at once.
      await sql`
        update jobs set locked_until = now() + make_interval(secs => ${leaseSeconds})
        where id in (select id from jobs where id = any(${ids}::bigint[]) and locked_by = ${workerId} for update skip locked)`;
    } catch (e) {
      logger.warn({ err: (e as Error).message }, "job lease renewal failed");
    }
  }

  /**
   * Runs claimed jobs. A batch that fails is run again in halves, down to single jobs, so a job
   * that can never succeed fails alone: before, its batch's other jobs failed with it, were
   * claimed again with it (one `run_at`), and were dead with it after their last attempt. Not when
   * the database is away (every part would fail alike), not for a RetryAfter (the batch's own
   * answer), not while stopping, and not once half the queue's visibility timeout is spent (leases
   * are renewed only up to it): what is left then fails as it is.
   */
  async function attempt(jobs: Job[], reg: Registration, since: number): Promise<Outcome[]> {
    try {
      return [{ jobs, removed: (await reg.run(jobs)) === JOB_REMOVED }];
    } catch (error) {
      const split =
        jobs.length > 1 && running && !(error instanceof RetryAfter) && !isDatabaseUnavailable(error) && real.now() - since < reg.visibilitySeconds * 500;
      if (!split) return [{ jobs, failed: { error } }];
      const half = Math.ceil(jobs.length / 2);
      const first = await attempt(jobs.slice(0, half), reg, since);
      return [...first, ...(await attempt(jobs.slice(half), reg, since))];
    }
  }

  /** Records what `attempt` found: the jobs done in one statement, the failed ones by error (one statement where all failed alike). */
  async function settleAll(outcomes: Outcome[], reg: Registration) {
    const done = outcomes.flatMap((o) => (o.removed || o.failed ? [] : o.jobs));
    if (done.length > 0) await settle(done, reg, undefined);
    const failures = Map.groupBy(
      outcomes.filter((o) => o.failed),
      (o) => describeFailure(o.failed!.error),
    );
    for (const group of failures.values())
      await settle(
        group.flatMap((o) => o.jobs),
        reg,
        group[0]!.failed!.error,
      );
  }

  async function run(jobs: Job[], reg: Registration) {
    reg.running++;
    const since = real.now();
    for (const job of jobs) held.set(job.id, { since, reg });
    try {
      await settleAll(await attempt(jobs, reg, since), reg);
    } catch (e) {
      logger.error({ jobs: jobs.map((j) => j.id), err: (e as Error).message }, "job bookkeeping failed; it will be claimed again");
    } finally {
      for (const job of jobs) held.delete(job.id);
      reg.running--;
      wake();
    }
  }

  /** One poll at a time (`stop` waits for the one under way, so that the pool can close after it); a wake during a poll asks for another after it. */
  const polls = singleFlight(poll);

  function tick(): Promise<void> {
    if (!running) return Promise.resolve();
    return polls.run();
  }

  async function poll() {
    let found = false;
    let failed = false;
    try {
      const wanted = [...registrations].flatMap(([queue, reg]) => {
        const free = reg.concurrency - reg.running;
        return free > 0 ? [{ queue, reg, free, n: free * reg.batchSize }] : [];
      });
      const claimed = Map.groupBy(wanted.length > 0 ? await claim(wanted) : [], (j) => j.queue);
      for (const { queue, reg, free } of wanted) {
        const jobs = claimed.get(queue) ?? [];
        if (jobs.length > 0) found = true;
        // Spread over the free slots: a few jobs run one each, a backlog runs in full batches.
        const per = Math.min(reg.batchSize, Math.ceil(jobs.length / free));
        for (let i = 0; i < jobs.length; i += per) {
          const p = run(jobs.slice(i, i + per), reg);
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        }
      }
    } catch (e) {
      failed = true;
      if (running) logger.warn({ err: (e as Error).message }, "job poll failed");
    }
    if (!running) return;
    if (failed) {
      real.clear(retry);
      retry = real.setTimeout(() => void tick(), pollMs, { unref: true });
    } else schedule(found ? 0 : pollMs);
  }

  function schedule(ms: number) {
    clock.clear(timer);
    timer = clock.setTimeout(() => void tick(), ms);
  }

  function wake() {
    if (running) schedule(0);
  }

  function registration(queue: Q, run: Registration["run"], batch: boolean, o: RegisterOptions): Registration {
    const spec = queueSpec(queues, queue);
    if (batch !== (spec.batchSize !== undefined)) throw new Error(`job queue "${queue}": the registry ${batch ? "gives no batchSize" : "gives a batchSize"}`);
    return {
      run,
      batchSize: spec.batchSize ?? 1,
      concurrency: spec.concurrency ?? DEFAULT_CONCURRENCY,
      visibilitySeconds: spec.visibilitySeconds ?? DEFAULT_VISIBILITY_SECONDS,
      backoff: o.backoff ?? defaultBackoff,
      running: 0,
    };
  }

  return {
    enqueue,
    wake,
    /** This instance's id: the `locked_by` of the jobs it claims (and the owner others may name it by). */
    workerId,
    /** Handles `queue` one job per call, up to the registry's `concurrency` calls at once in this process. */
    register<P>(queue: Q, handler: JobHandler<P>, o: RegisterOptions = {}) {
      registrations.set(
        queue,
        registration(queue, (jobs) => handler(jobs[0] as Job<P>), false, o),
      );
    },
    /**
     * Handles `queue` in batches of up to the registry's `batchSize` jobs per handler call (up to
     * `concurrency` calls at once): for jobs whose work is cheaper done together (one transaction
     * for many small payloads). A batch that fails is run again in halves, so only the jobs that
     * fail alone are retried (`attempt`).
     */
    registerBatch<P>(queue: Q, handler: BatchHandler<P>, o: RegisterOptions = {}) {
      registrations.set(
        queue,
        registration(queue, (jobs) => handler(jobs as Job<P>[]), true, o),
      );
    },
    /** The queues this instance handles. */
    registered: () => [...registrations.keys()],
    start() {
      running = true;
      schedule(0);
      renewer ??= real.setInterval(() => void renewLeases(), (leaseSeconds * 1000) / 3);
      // A job under a lease that lapses (an instance that died with it in hand) is due again in real time.
      watch ??= real.setInterval(() => void tick(), (leaseSeconds * 1000) / 3, { unref: true });
    },
    /** Stops claiming and waits for the jobs in hand to finish. */
    async stop() {
      running = false;
      clock.clear(timer);
      real.clear(renewer);
      renewer = undefined;
      real.clear(retry);
      real.clear(watch);
      watch = undefined;
      await polls.current;
      await Promise.allSettled([...inFlight]);
    },
    async stats() {
      const [row] = await sql<{ backlog: number; dead: number; oldest_seconds: number | null }[]>`
        select count(*) filter (where not dead) as backlog, count(*) filter (where dead) as dead,
               extract(epoch from ${dueBy(sql)} - min(run_at) filter (
                 where not dead and run_at <= ${dueBy(sql)} and (locked_until is null or locked_until < now())))::float8 as oldest_seconds
        from jobs`;
      return { backlog: row?.backlog ?? 0, dead: row?.dead ?? 0, oldestSeconds: Math.max(0, row?.oldest_seconds ?? 0) };
    },
  };
}

export type JobQueue = ReturnType<typeof createJobQueue<QueueName>>;
