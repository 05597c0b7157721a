/**
 * One pass of some work at a time, and never a request lost: the loop behind the event tail,
 * the webhook consumer, the job poller and the realtime credential re-check.
 *
 * `run()` starts a run when none is under way. Called while one is, it asks for one more pass
 * after the current one (any number of such calls fold into that one pass) and returns the
 * run's promise, which settles once a pass ends with no further pass asked for: the pass did
 * not return true (true: "there is more, go again") and nobody called `run()` meanwhile.
 * `arg` reaches the first pass of a run only; a pass asked for later is asked without it.
 * A pass that throws ends the run, whose promise rejects with that error. `idle` runs whenever a
 * run ends (whether it succeeded or not), before its promise settles.
 */
export type SingleFlight<A> = {
  run(arg?: A): Promise<void>;
  /** The run under way, if any. */
  readonly current: Promise<void> | undefined;
};

export function singleFlight<A = never>(pass: (arg: A | undefined) => Promise<boolean> | Promise<void>, opts: { idle?: () => void } = {}): SingleFlight<A> {
  let current: Promise<void> | undefined;
  let again = false;

  async function loop(arg: A | undefined) {
    try {
      for (;;) {
        again = false;
        const more = await pass(arg);
        arg = undefined;
        if (!more && !again) return;
      }
    } finally {
      current = undefined;
      opts.idle?.();
    }
  }

  return {
    run(arg) {
      if (current) {
        again = true;
        return current;
      }
      // Set before the first pass starts, so that a call from inside it asks for another.
      const { promise, resolve, reject } = Promise.withResolvers<void>();
      current = promise;
      loop(arg).then(resolve, reject);
      return promise;
    },
    get current() {
      return current;
    },
  };
}
