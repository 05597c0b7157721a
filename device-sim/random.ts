import { en, Faker } from "@faker-js/faker";

/** A seeded random stream. Every random choice of the simulator goes through one, so `--seed` replays a run. */
export type Random = {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, max], both included. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Standard normal (Box-Muller), for drifts that wander rather than jump. */
  normal(): number;
  /** Exponentially distributed wait with the given mean: the gap between Poisson arrivals. */
  exponential(mean: number): number;
  hex(length: number): string;
  /** An independent stream for a named part (a device, a scenario step) that does not shift when others draw more. */
  fork(label: string): Random;
};

/** 32-bit FNV-1a: turns a seed and a label into a fork's seed. */
export function hashSeed(seed: number, label: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < label.length; i++) {
    h ^= label.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function createRandom(seed: number): Random {
  // sfc32: small, fast and good enough for simulation; state seeded through splitmix32.
  let s = seed >>> 0;
  const splitmix = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix();
  let b = splitmix();
  let c = splitmix();
  let d = splitmix();
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const hex = (length: number) => Array.from({ length }, () => int(0, 15).toString(16)).join("");
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    normal: () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()),
    exponential: (mean) => -Math.log(1 - next()) * mean,
    hex,
    fork: (label) => createRandom(hashSeed(seed, label)),
  };
}

/** Seed from `--seed`, or a fresh one (printed in the report so the run can be replayed). */
export function resolveSeed(option: string | number | undefined): number {
  if (option === undefined || option === "") return Math.floor(Math.random() * 2 ** 31);
  const n = Number(option);
  return Number.isFinite(n) ? n >>> 0 : hashSeed(0, String(option));
}

const sharedFaker = new Faker({ locale: [en] });

/**
 * Faker reseeded from the caller's stream before each use: many devices draw texts in an
 * order that depends on timing, so one shared faker seeded once would not replay.
 */
export function fakeWith<T>(rng: Random, draw: (faker: Faker) => T): T {
  sharedFaker.seed(rng.int(0, 2 ** 31 - 1));
  return draw(sharedFaker);
}

/** A North-American-looking E.164 number: area code and exchange never start with 0 or 1. */
export function phoneNumber(rng: Random): string {
  return `+1${rng.int(200, 999)}${rng.int(200, 999)}${String(rng.int(0, 9999)).padStart(4, "0")}`;
}
