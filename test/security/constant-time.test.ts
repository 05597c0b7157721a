import { afterEach, describe, expect, spyOn, test } from "bun:test";
import * as nodeCrypto from "node:crypto";
import * as cryptoLib from "../../server/lib/crypto";
import { isValidProviderSignature, providerSignature } from "../../server/provider/signature";
import { signChannel, verifyChannelSignature } from "../../server/realtime/protocol";

/**
 * Signature checks compare in constant time (issue 9, item 4): the provider callback's
 * X-Provider-Signature and the Pusher subscription `auth` go through constantTimeEqual, which is
 * crypto.timingSafeEqual over digests; and, as a smoke check, a signature wrong in its first byte
 * takes about as long to refuse as one wrong in its last byte.
 */
const TOKEN = "provider-auth-token";
const URL_ = "http://localhost:3000/api/provider/sms";
const FIELDS = { From: "+15550001111", To: "+15550002222", Body: "hello", MessageSid: "SM1", AccountSid: "AC1" };
const KEY = "app-key";
const SECRET = "app-secret";
const SOCKET = "1234.5678";
const CHANNEL = "private-organization.1";

/** The same string with the character at `index` changed (still the same length). */
function flip(value: string, index: number) {
  const i = index < 0 ? value.length + index : index;
  const c = value[i] === "A" ? "B" : "A";
  return value.slice(0, i) + c + value.slice(i + 1);
}

const spies: { mockRestore(): void }[] = [];
afterEach(() => {
  for (const s of spies.splice(0)) s.mockRestore();
});

describe("the comparison the signature checks use", () => {
  test("the provider signature check calls constantTimeEqual with the expected and the given signature", () => {
    const spy = spyOn(cryptoLib, "constantTimeEqual");
    spies.push(spy);
    const good = providerSignature(TOKEN, URL_, FIELDS);
    expect(isValidProviderSignature(TOKEN, URL_, FIELDS, good)).toBe(true);
    expect(isValidProviderSignature(TOKEN, URL_, FIELDS, flip(good, -2))).toBe(false);
    expect(spy.mock.calls).toEqual([
      [good, good],
      [good, flip(good, -2)],
    ]);
  });

  test("the Pusher subscription check calls constantTimeEqual with the given and the expected auth", () => {
    const spy = spyOn(cryptoLib, "constantTimeEqual");
    spies.push(spy);
    const good = signChannel(KEY, SECRET, SOCKET, CHANNEL);
    expect(verifyChannelSignature(KEY, SECRET, SOCKET, CHANNEL, good)).toBe(true);
    expect(verifyChannelSignature(KEY, SECRET, SOCKET, CHANNEL, flip(good, -1))).toBe(false);
    expect(spy.mock.calls.map((c) => [...c].sort())).toEqual([[good, good], [good, flip(good, -1)].sort()]);
  });

  test("constantTimeEqual is crypto.timingSafeEqual over equal-length digests, whatever the input lengths", () => {
    const spy = spyOn(nodeCrypto, "timingSafeEqual");
    spies.push(spy);
    expect(cryptoLib.constantTimeEqual("abc", "abc")).toBe(true);
    expect(cryptoLib.constantTimeEqual("abc", "abd")).toBe(false);
    expect(cryptoLib.constantTimeEqual("abc", "abcd")).toBe(false);
    expect(cryptoLib.constantTimeEqual("", "x".repeat(10_000))).toBe(false);
    // Either the spy saw the calls, or (if the binding cannot be spied) the source says so.
    if (spy.mock.calls.length > 0) {
      expect(spy.mock.calls.length).toBe(4);
      for (const [x, y] of spy.mock.calls) expect([(x as Buffer).length, (y as Buffer).length]).toEqual([32, 32]);
    } else {
      const source = cryptoLib.constantTimeEqual.toString();
      expect(source).toContain("timingSafeEqual");
      expect(source).not.toMatch(/[^=!]===?[^=]/);
    }
  });
});

/**
 * Ratio of the low quartiles of block times of two variants, alternating which goes first. The
 * low quartile is what a call costs when nothing else runs; on a loaded 2-core machine the
 * median still swings. Up to three tries: the bound is for a clear difference, not noise.
 */
function timeRatio(a: () => unknown, b: () => unknown, rounds = 61, per = 200): number {
  let ratio = 1;
  for (let attempt = 0; attempt < 3; attempt++) {
    const samples: [number[], number[]] = [[], []];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      for (const v of order) {
        const fn = v === 0 ? a : b;
        const start = Bun.nanoseconds();
        for (let i = 0; i < per; i++) fn();
        samples[v as 0 | 1].push(Bun.nanoseconds() - start);
      }
    }
    const [qa, qb] = samples.map((s) => s.sort((x, y) => x - y)[Math.floor(s.length / 4)]!);
    ratio = qa! / qb!;
    if (ratio > 0.5 && ratio < 2) break;
  }
  return ratio;
}

describe("timing smoke check (generous bounds: a short-circuiting compare differs by far more on long inputs)", () => {
  test("a provider signature wrong in its first byte and one wrong in its last take about as long", () => {
    const good = providerSignature(TOKEN, URL_, FIELDS);
    const [first, last] = [flip(good, 0), flip(good, -2)];
    const ratio = timeRatio(
      () => isValidProviderSignature(TOKEN, URL_, FIELDS, first),
      () => isValidProviderSignature(TOKEN, URL_, FIELDS, last),
    );
    expect(ratio).toBeGreaterThan(0.5);
    expect(ratio).toBeLessThan(2);
  });

  test("a Pusher auth wrong in its first signature byte and one wrong in its last take about as long", () => {
    const good = signChannel(KEY, SECRET, SOCKET, CHANNEL);
    const sigStart = good.indexOf(":") + 1;
    const [first, last] = [flip(good, sigStart), flip(good, -1)];
    const ratio = timeRatio(
      () => verifyChannelSignature(KEY, SECRET, SOCKET, CHANNEL, first),
      () => verifyChannelSignature(KEY, SECRET, SOCKET, CHANNEL, last),
    );
    expect(ratio).toBeGreaterThan(0.5);
    expect(ratio).toBeLessThan(2);
  });
});
