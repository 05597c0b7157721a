/**
 * Bounded concurrency per endpoint without head-of-line blocking. A delivery that finds its
 * endpoint at the cap does not wait in a worker slot: it gets back a delay and goes back to the
 * queue, so slow or dead endpoints hold at most `cap` slots each while every other endpoint
 * keeps flowing. The delay grows with the endpoint's observed latency and with how many
 * deliveries it has already turned away since a slot last freed, so a dead endpoint with a
 * large backlog is polled rarely instead of churning the queue.
 */
export type EndpointLimiter = {
  /** A release function when a slot was free, else how long to wait before trying again (ms). */
  tryAcquire(endpoint: string): { release: (latencyMs: number) => void } | { retryInMs: number };
  inFlight(endpoint: string): number;
};

type State = { inFlight: number; ewmaMs: number; turnedAway: number };

export function createEndpointLimiter(opts: { cap: number; maxDelayMs?: number; random?: () => number }): EndpointLimiter {
  const states = new Map<string, State>();
  const maxDelayMs = opts.maxDelayMs ?? 60_000;
  const random = opts.random ?? Math.random;

  function state(endpoint: string): State {
    let s = states.get(endpoint);
    if (!s) states.set(endpoint, (s = { inFlight: 0, ewmaMs: 0, turnedAway: 0 }));
    return s;
  }

  return {
    tryAcquire(endpoint) {
      const s = state(endpoint);
      if (s.inFlight >= opts.cap) {
        s.turnedAway++;
        const base = Math.max(50, s.ewmaMs) * (1 + s.turnedAway / opts.cap);
        return { retryInMs: Math.round(Math.min(maxDelayMs, base) * (0.5 + random())) };
      }
      s.inFlight++;
      let released = false;
      return {
        release(latencyMs) {
          if (released) return;
          released = true;
          s.inFlight--;
          s.turnedAway = 0;
          s.ewmaMs = s.ewmaMs === 0 ? latencyMs : s.ewmaMs * 0.8 + latencyMs * 0.2;
          // Idle endpoints are forgotten, so the map stays as small as the set of busy endpoints.
          if (s.inFlight === 0 && s.ewmaMs < 1000) states.delete(endpoint);
        },
      };
    },
    inFlight: (endpoint) => states.get(endpoint)?.inFlight ?? 0,
  };
}
