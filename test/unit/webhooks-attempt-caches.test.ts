import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { ATTEMPT_CACHE_TTL, createAttemptCaches } from "../../server/webhooks/attempt-caches";
import { generateSigningSecret } from "../../server/webhooks/secrets";
import { signatureHeaders } from "../../server/webhooks/signing";
import { createFakeClock } from "../fake-clock";

function setup(addresses: Record<string, string[]>) {
  const clock = createFakeClock();
  const lookups: string[] = [];
  const opened: string[] = [];
  const caches = createAttemptCaches({
    clock,
    allowPrivate: false,
    lookup: async (host) => {
      lookups.push(host);
      return addresses[host] ?? [];
    },
    open: async (sealed) => {
      opened.push(sealed);
      return sealed.slice("sealed:".length);
    },
  });
  return { clock, caches, lookups, opened };
}

describe("per-integration attempt caches", () => {
  test("a pass is never kept: every attempt resolves again, so a name that moved to a private address is refused", async () => {
    const addresses: Record<string, string[]> = { "moving.example": ["93.184.216.34"] };
    const { caches, lookups } = setup(addresses);
    expect(await caches.resolveTarget("https://moving.example/hook")).toEqual({ connectTo: "93.184.216.34" });
    addresses["moving.example"] = ["10.0.0.5"];
    expect(await caches.resolveTarget("https://moving.example/hook")).toEqual({ refused: expect.stringContaining("private") });
    expect(lookups).toEqual(["moving.example", "moving.example"]);
  });

  test("a refusal is never kept: every attempt checks again", async () => {
    const { caches, lookups } = setup({ "inside.example": ["192.168.1.1"] });
    expect(await caches.resolveTarget("https://inside.example/")).toEqual({ refused: expect.stringContaining("private") });
    expect(await caches.resolveTarget("https://inside.example/")).toEqual({ refused: expect.stringContaining("private") });
    expect(lookups.length).toBe(2);
    expect(await caches.resolveTarget("http://127.0.0.1/")).toEqual({ refused: expect.stringContaining("loopback") });
  });

  test("the signing key is opened once per sealed secret within the TTL and verifies with standardwebhooks", async () => {
    const { clock, caches, opened } = setup({});
    const secret = generateSigningSecret();
    const key = await caches.key(`sealed:${secret}`);
    expect(await caches.key(`sealed:${secret}`)).toBe(key);
    expect(opened.length).toBe(1);
    const body = JSON.stringify({ id: "evt_1", type: "message.received", created_at: new Date().toISOString(), data: {} });
    expect(new Webhook(secret).verify(body, signatureHeaders(key, "evt_1", body, Date.now()))).toMatchObject({ id: "evt_1" });
    // A new secret is a new sealed value: never signed with the old key.
    const other = generateSigningSecret();
    const body2 = body;
    expect(new Webhook(other).verify(body2, signatureHeaders(await caches.key(`sealed:${other}`), "evt_1", body2, Date.now()))).toMatchObject({
      id: "evt_1",
    });
    clock.advance(ATTEMPT_CACHE_TTL.keyMs + 1);
    await caches.key(`sealed:${secret}`);
    expect(opened.length).toBe(3);
  });
});
