import type { RateLimiter } from "../lib/rate-limit";
import { addressKey, emailKey, pairKey, rateLimited, WINDOW_SECONDS } from "./limits";

/**
 * Sign-in throttling after OWASP's Authentication and Credential Stuffing cheat sheets: failures
 * are counted per account, per (account, client address) pair and per address, over 15-minute
 * windows. An account or pair that used up its free failures waits before each further attempt,
 * the wait doubling with every failure (exponential delays, no permanent lock); the address has
 * only a high ceiling, so a shared address (an office behind one NAT) is never closed by failures
 * against one account: those stop at the pair's throttle long before the ceiling.
 *
 * Every attempt is counted before it is judged (a parallel burst cannot pass a check made before
 * any of it failed), taken back when refused or right, and an attempt past the free failures waits
 * until every earlier one has been judged, so at most one is judged per delay.
 */
export const LOGIN_LIMITS = {
  /** Failures of one account from one address before the delays start. */
  pairFree: 10,
  /** Failures of one account from all addresses before the delays start. */
  accountFree: 20,
  /** Failures from one address, over every account, before it is refused until its window ends. */
  addressCeiling: 100,
  /** The first delay, doubling with each further failure, and its cap (seconds). */
  firstDelay: 60,
  maxDelay: WINDOW_SECONDS,
} as const;

type Throttle = { key: string; free: number; delays: boolean };

const throttlesFor = (email: string | null, address: string): Throttle[] => [
  { key: addressKey(address), free: LOGIN_LIMITS.addressCeiling, delays: false },
  ...(email === null
    ? []
    : [
        { key: emailKey(email), free: LOGIN_LIMITS.accountFree, delays: true },
        { key: pairKey(email, address), free: LOGIN_LIMITS.pairFree, delays: true },
      ]),
];

/** The wait after the n-th failure of a throttle with `free` free failures. */
export const delayAfter = (n: number, free: number) => Math.min(LOGIN_LIMITS.firstDelay * 2 ** Math.max(0, n - free), LOGIN_LIMITS.maxDelay);

const judgedKey = (key: string) => `${key}:judged`;
const waitKey = (key: string) => `${key}:wait`;

/** An attempt counted in advance: `failed` when it was wrong, `release` when it was right. */
export type LoginAttempt = { failed: () => Promise<void>; release: () => Promise<void>; retryIn?: number };

export function createLoginLimits(limiter: RateLimiter) {
  /** Seconds the attempt counted as number `n` must wait before its turn, other than the delay itself. */
  async function before(t: Throttle, n: number): Promise<number> {
    if (n <= t.free) return 0;
    if (!t.delays) return Math.max(1, (await limiter.peek(t.key)).resetIn);
    // Earlier attempts still being judged: this one comes after them.
    return (await limiter.peek(judgedKey(t.key))).count < n - 1 ? 1 : 0;
  }

  /** Past the wait the last failure started, the first attempt takes the turn (starting the next wait); others wait. */
  async function turn(t: Throttle, n: number): Promise<number> {
    if (!t.delays || n <= t.free) return 0;
    const taken = await limiter.hit(waitKey(t.key), delayAfter(n, t.free));
    return taken.count === 1 ? 0 : Math.max(1, taken.resetIn);
  }

  /** Counts an attempt on the account (null: not known yet) from the address; `retryIn` set when it must wait. */
  async function tryReserve(email: string | null, address: string, extraKeys: string[] = []): Promise<LoginAttempt> {
    const throttles = [...throttlesFor(email, address), ...extraKeys.map((key) => ({ key, free: 10, delays: false }))];
    const counts = await Promise.all(throttles.map((t) => limiter.hit(t.key, WINDOW_SECONDS)));
    const release = async () => {
      await Promise.all(throttles.map((t) => limiter.release(t.key)));
    };
    let retryIn = Math.max(...(await Promise.all(throttles.map((t, i) => before(t, counts[i]!.count)))));
    if (retryIn === 0) retryIn = Math.max(...(await Promise.all(throttles.map((t, i) => turn(t, counts[i]!.count)))));
    if (retryIn > 0) {
      await release();
      return { failed: async () => {}, release: async () => {}, retryIn };
    }
    // A right answer on a turn ends the wait that turn started: nothing failed.
    const turns = throttles.filter((t, i) => t.delays && counts[i]!.count > t.free).map((t) => waitKey(t.key));
    const right = async () => {
      await release();
      await Promise.all(turns.map((k) => limiter.reset(k)));
    };
    const failed = async () => {
      await Promise.all(
        throttles.map(async (t, i) => {
          if (!t.delays) return;
          await limiter.hit(judgedKey(t.key), WINDOW_SECONDS);
          if (counts[i]!.count >= t.free) await limiter.hit(waitKey(t.key), delayAfter(counts[i]!.count, t.free));
        }),
      );
    };
    return { failed, release: right };
  }

  /** tryReserve that answers 429 when the attempt must wait. */
  async function reserve(email: string | null, address: string, extraKeys: string[] = []): Promise<LoginAttempt> {
    const attempt = await tryReserve(email, address, extraKeys);
    if (attempt.retryIn) throw rateLimited(attempt.retryIn);
    return attempt;
  }

  /** A full sign-in: the account's failures (from every address) are forgotten, the address's are not. */
  async function signedIn(email: string, address: string) {
    const keys = [emailKey(email), pairKey(email, address)];
    await Promise.all(keys.flatMap((k) => [k, judgedKey(k), waitKey(k)]).map((k) => limiter.reset(k)));
  }

  return { tryReserve, reserve, signedIn };
}

export type LoginLimits = ReturnType<typeof createLoginLimits>;
