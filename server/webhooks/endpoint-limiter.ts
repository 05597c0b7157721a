/**
 * Bounded concurrency per endpoint without head-of-line blocking. At most `cap` attempts run
 * against one endpoint at a time. When it is at the cap:
 * - a fast endpoint (recent attempts well under a second) gets a short in-process wait in a
 *   bounded FIFO, since a slot frees within milliseconds and a round trip through the queue
 *   would cost more than the wait;
 * - a slow or dead endpoint, or a full FIFO, sends the delivery back to the queue with a delay
 *   instead of letting it hold a worker slot, so such an endpoint holds at most `cap` slots
 *   (plus its short FIFO while it still looked fast) and every other endpoint keeps flowing.
 * The delay grows with the endpoint's latency and with how many deliveries it has turned away
 * since a slot last freed, so a dead endpoint with a large backlog is polled rarely instead of
 * churning the queue.
 */
export type Slot = { release: (latencyMs: number) => void };
export type EndpointLimiter = {
  acquire(endpoint: string): Promise<Slot | { retryInMs: number }>;
  /**
   * A slot, waiting in the FIFO for as long as it takes: for a caller that bounds its own waiters
   * (the dispatcher's lanes run at most `cap` attempts per endpoint), never turned away.
   */
  wait(endpoint: string): Promise<Slot>;
  inFlight(endpoint: string): number;
};

type State = { inFlight: number; ewmaMs: number; turnedAway: number; waiting: Array<(slot: Slot) => void> };

export function createEndpointLimiter(opts: {
  cap: number;
  maxWaiting?: number;
  fastMs?: number;
  maxDelayMs?: number;
  random?: () => number;
}): EndpointLimiter {
  const states = new Map<string, State>();
  const maxWaiting = opts.maxWaiting ?? opts.cap * 4;
  const fastMs = opts.fastMs ?? 250;
  const maxDelayMs = opts.maxDelayMs ?? 60_000;
  const random = opts.random ?? Math.random;

  function state(endpoint: string): State {
    let s = states.get(endpoint);
    if (!s) states.set(endpoint, (s = { inFlight: 0, ewmaMs: 0, turnedAway: 0, waiting: [] }));
    return s;
  }

  function slotFor(endpoint: string, s: State): Slot {
    let released = false;
    return {
      release(latencyMs) {
        if (released) return;
        released = true;
        s.turnedAway = 0;
        s.ewmaMs = s.ewmaMs === 0 ? latencyMs : s.ewmaMs * 0.8 + latencyMs * 0.2;
        const next = s.waiting.shift();
        // The slot passes straight to the next waiter; in-flight count stays the same.
        if (next) return next(slotFor(endpoint, s));
        s.inFlight--;
        // Idle fast endpoints are forgotten, so the map stays as small as the set of busy or slow endpoints.
        if (s.inFlight === 0 && s.ewmaMs < fastMs) states.delete(endpoint);
      },
    };
  }

  const queueFor = (s: State) => new Promise<Slot>((resolve) => s.waiting.push(resolve));
  /** A free slot taken now, or null at the cap. */
  function take(endpoint: string, s: State): Slot | null {
    if (s.inFlight >= opts.cap) return null;
    s.inFlight++;
    return slotFor(endpoint, s);
  }

  return {
    async wait(endpoint) {
      const s = state(endpoint);
      return take(endpoint, s) ?? queueFor(s);
    },
    async acquire(endpoint) {
      const s = state(endpoint);
      const free = take(endpoint, s);
      if (free) return free;
      if (s.ewmaMs < fastMs && s.waiting.length < maxWaiting) return queueFor(s);
      s.turnedAway++;
      const base = Math.max(50, s.ewmaMs) * (1 + s.turnedAway / opts.cap);
      return { retryInMs: Math.round(Math.min(maxDelayMs, base) * (0.5 + random())) };
    },
    inFlight: (endpoint) => states.get(endpoint)?.inFlight ?? 0,
  };
}
