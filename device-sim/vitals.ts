import type { Random } from "./random";

/** What a phone reports in its heartbeat besides being alive. */
export type Vitals = { battery: number; charging: boolean; signal: number[] };

export function initialVitals(rng: Random, slots: number): Vitals {
  return { battery: rng.int(35, 100), charging: rng.chance(0.2), signal: Array.from({ length: slots }, () => rng.int(40, 95)) };
}

/** Percent per hour: a phone in doze barely drains; an active one drains like a phone in use; a charger fills it. */
const DRAIN_ACTIVE = 6;
const DRAIN_DOZE = 1.5;
const CHARGE = 40;

/**
 * Moves the vitals on by `seconds`: battery drains (or charges: people plug in when it is low
 * and unplug when full), each SIM's signal wanders around its own mean and is pulled back
 * towards it (Ornstein-Uhlenbeck), so values drift like a real phone's instead of jumping.
 */
export function driftVitals(v: Vitals, seconds: number, rng: Random, doze: boolean): Vitals {
  const hours = seconds / 3600;
  let charging = v.charging;
  if (!charging && v.battery <= 15 && rng.chance(Math.min(1, hours * 4))) charging = true;
  if (charging && v.battery >= 100) charging = rng.chance(0.5);
  const rate = charging ? CHARGE : -(doze ? DRAIN_DOZE : DRAIN_ACTIVE);
  const battery = clamp(v.battery + rate * hours * (0.8 + 0.4 * rng.next()), 0, 100);
  const pull = 1 - Math.exp(-seconds / 600);
  const signal = v.signal.map((s) => clamp(s + (70 - s) * pull + rng.normal() * Math.sqrt(seconds) * 0.8, 0, 100));
  return { battery, charging, signal };
}

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n));

/** Whole percents, as Android reports them. */
export const reported = (v: Vitals) => ({ battery_level: Math.round(v.battery), signal: v.signal.map((s) => Math.round(s)) });
