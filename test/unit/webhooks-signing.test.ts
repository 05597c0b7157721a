import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { open, parseSecretsKey, seal } from "../../server/lib/secret-box";
import { generateSigningSecret } from "../../server/webhooks/secrets";
import { signatureHeaders } from "../../server/webhooks/signing";

describe("Standard Webhooks signing", () => {
  test("secrets are whsec_ + base64 of 24 random bytes, each one new", () => {
    const a = generateSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(a.slice(6), "base64").length).toBe(24);
    expect(generateSigningSecret()).not.toBe(a);
  });

  test("the standardwebhooks library verifies our headers, and refuses another secret", () => {
    const secret = generateSigningSecret();
    const body = JSON.stringify({ id: "evt_1", type: "webhook.test", created_at: new Date().toISOString(), data: {} });
    const headers = signatureHeaders(secret, "evt_1", body, Date.now());
    expect(headers["webhook-signature"]).toMatch(/^v1,/);
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: "evt_1" });
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
  });
});

describe("sealed secrets (AES-256-GCM)", () => {
  const key = parseSecretsKey("a".repeat(64));

  test("seal then open gives the secret back; each seal differs", () => {
    const s1 = seal(key, "whsec_abc");
    expect(s1).toStartWith("v1:");
    expect(s1).not.toContain("whsec_abc");
    expect(seal(key, "whsec_abc")).not.toBe(s1);
    expect(open(key, s1)).toBe("whsec_abc");
  });

  test("a wrong key or a changed byte fails to open", () => {
    const sealed = seal(key, "whsec_abc");
    expect(() => open(parseSecretsKey("b".repeat(64)), sealed)).toThrow();
    const raw = Buffer.from(sealed.slice(3), "base64");
    raw[raw.length - 1]! ^= 1;
    expect(() => open(key, `v1:${raw.toString("base64")}`)).toThrow();
  });

  test("SECRETS_KEY accepts 64 hex characters or base64 of 32 bytes only", () => {
    expect(parseSecretsKey(Buffer.alloc(32, 7).toString("base64")).length).toBe(32);
    expect(() => parseSecretsKey(Buffer.alloc(16).toString("base64"))).toThrow();
  });
});
