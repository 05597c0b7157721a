import { describe, expect, test } from "bun:test";
import { deviceRegistration } from "../../device-sim/phones";
import { createRandom, fakeWith, phoneNumber, resolveSeed } from "../../device-sim/random";
import { randomSender, randomText } from "../../device-sim/texts";

const draw = (seed: number) => {
  const r = createRandom(seed);
  return [r.next(), r.int(1, 6), r.hex(16), phoneNumber(r), r.exponential(10)];
};

describe("seeded random", () => {
  test("the same seed replays the same draws; another seed does not", () => {
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  test("forks are independent of how much the parent or siblings drew", () => {
    const a = createRandom(7);
    const b = createRandom(7);
    b.next();
    b.next();
    const fa = a.fork("device-3");
    const fb = b.fork("device-3");
    b.fork("device-2").next();
    expect([fa.next(), fa.hex(8)]).toEqual([fb.next(), fb.hex(8)]);
    expect(a.fork("device-4").next()).not.toBe(createRandom(7).fork("device-3").next());
  });

  test("values stay in range and look like what the API expects", () => {
    const r = createRandom(1);
    for (let i = 0; i < 2000; i++) {
      const n = r.int(3, 9);
      expect(n >= 3 && n <= 9).toBe(true);
      expect(r.next()).toBeLessThan(1);
    }
    expect(r.hex(16)).toMatch(/^[0-9a-f]{16}$/);
    expect(phoneNumber(r)).toMatch(/^\+1[2-9]\d{2}[2-9]\d{6}$/);
  });

  test("faker output is reproducible from the stream, whatever ran in between", () => {
    const text = (seed: number) => fakeWith(createRandom(seed), (f) => f.lorem.sentence());
    const first = text(5);
    fakeWith(createRandom(99), (f) => f.person.fullName());
    expect(text(5)).toBe(first);
  });

  test("--seed accepts numbers and words", () => {
    expect(resolveSeed("123")).toBe(123);
    expect(resolveSeed("qa-run")).toBe(resolveSeed("qa-run"));
    expect(typeof resolveSeed(undefined)).toBe("number");
  });
});

describe("simulated phones", () => {
  test("a seed and an index always make the same phone; other indexes make other phones", () => {
    const phone = (seed: number, i: number) => deviceRegistration(createRandom(seed).fork(`device-${i}`), i);
    expect(phone(42, 3)).toEqual(phone(42, 3));
    expect(phone(42, 3).android_id).not.toBe(phone(42, 4).android_id);
    const p = phone(42, 3);
    expect(p.android_id).toMatch(/^[0-9a-f]{16}$/);
    expect(p.numbers).toHaveLength(p.sim_slots.length);
    for (const n of p.numbers) expect(n).toMatch(/^\+[1-9]\d{6,14}$/);
  });

  test("random SMS look like SMS: senders up to 20 characters, bodies 1..1600", () => {
    const rng = createRandom(8);
    for (let i = 0; i < 300; i++) {
      expect(randomSender(rng).length).toBeLessThanOrEqual(20);
      const body = randomText(rng);
      expect(body.length).toBeGreaterThan(0);
      expect(body.length).toBeLessThanOrEqual(1600);
    }
  });
});
