import { describe, expect, test } from "bun:test";
import { checkTotp, newTotpSecret } from "../../server/auth/totp";

// RFC 6238 appendix B, SHA-1 seed "12345678901234567890" (base32 below), last 6 of the 8 digits.
const SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
const VECTORS: [number, string][] = [
  [59, "287082"],
  [1111111109, "081804"],
  [1234567890, "005924"],
  [2000000000, "279037"],
];

describe("checkTotp", () => {
  test("accepts the RFC 6238 test vectors and answers their time step", async () => {
    for (const [seconds, code] of VECTORS) {
      expect(await checkTotp({ secret: SECRET, code, nowMs: seconds * 1000, afterStep: null })).toBe(Math.floor(seconds / 30));
    }
  });

  test("one step of drift either way is accepted, two are not", async () => {
    const [seconds, code] = VECTORS[2]!;
    for (const drift of [-30, 30]) expect(await checkTotp({ secret: SECRET, code, nowMs: (seconds + drift) * 1000, afterStep: null })).not.toBeNull();
    for (const drift of [-61, 61]) expect(await checkTotp({ secret: SECRET, code, nowMs: (seconds + drift) * 1000, afterStep: null })).toBeNull();
  });

  test("a step at or before afterStep is refused (replay)", async () => {
    const [seconds, code] = VECTORS[1]!;
    const step = Math.floor(seconds / 30);
    expect(await checkTotp({ secret: SECRET, code, nowMs: seconds * 1000, afterStep: step })).toBeNull();
    expect(await checkTotp({ secret: SECRET, code, nowMs: seconds * 1000, afterStep: step - 1 })).toBe(step);
  });

  test("wrong or malformed codes are null, never an exception", async () => {
    for (const code of ["000000", "12345", "abcdef", ""]) {
      expect(await checkTotp({ secret: SECRET, code, nowMs: 59_000, afterStep: null })).toBeNull();
    }
  });

  test("new secrets are 160-bit base32 with an otpauth URL naming the issuer", () => {
    const { secret, otpauthUrl } = newTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(otpauthUrl("a@example.test")).toBe(`otpauth://totp/simhost:a%40example.test?secret=${secret}&issuer=simhost`);
  });
});
