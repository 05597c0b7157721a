import { describe, expect, test } from "bun:test";
import { createRandom } from "../../device-sim/random";
import { percentile, summarize } from "../../device-sim/stats";
import { driftVitals, initialVitals, reported } from "../../device-sim/vitals";

describe("battery and signal drift", () => {
  test("a phone in use drains, a dozing one drains slower, values stay in 0..100", () => {
    const rng = createRandom(3);
    const start = { battery: 80, charging: false, signal: [60, 40] };
    let active = start;
    let doze = start;
    for (let i = 0; i < 60; i++) {
      active = driftVitals(active, 60, rng, false);
      doze = driftVitals(doze, 60, rng, true);
      for (const s of [...active.signal, ...doze.signal]) expect(s >= 0 && s <= 100).toBe(true);
    }
    expect(active.battery).toBeLessThan(start.battery - 3);
    expect(doze.battery).toBeGreaterThan(active.battery);
  });

  test("signal moves gradually, not in jumps, and is reported in whole percents", () => {
    const rng = createRandom(4);
    let v = initialVitals(rng, 1);
    for (let i = 0; i < 100; i++) {
      const next = driftVitals(v, 60, rng, false);
      expect(Math.abs(next.signal[0]! - v.signal[0]!)).toBeLessThan(40);
      v = next;
    }
    expect(Number.isInteger(reported(v).battery_level)).toBe(true);
  });
});

describe("latency summary", () => {
  test("nearest-rank percentiles", () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(summarize([5, 1, 3])).toEqual({ count: 3, p50: 3, p95: 5, p99: 5, max: 5 });
    expect(summarize([])).toEqual({ count: 0, p50: 0, p95: 0, p99: 0, max: 0 });
  });
});
