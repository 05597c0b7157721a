import { describe, expect, test } from "bun:test";
import twilio from "twilio";
import { providerSignature, verifyProviderSignature } from "../../device-sim/signature";

const token = "dev-provider-token";
const url = "http://localhost:3000/api/provider/sms";

describe("provider signature", () => {
  test("matches the twilio library's expected signature for the same URL and form", () => {
    const params = { From: "+15551234567", To: "+15005550006", Body: "SIM-AB2C", MessageSid: "SM123", AccountSid: "AC456" };
    expect(providerSignature(token, url, params)).toBe(twilio.getExpectedTwilioSignature(token, url, params));
    expect(twilio.validateRequest(token, providerSignature(token, url, params), url, params)).toBe(true);
  });

  test("sorts fields by name and keeps non-ASCII bodies intact", () => {
    const params = { Body: "héllo 👋 & = ?", To: "+15005550006", AccountSid: "AC1", From: "+4915112345678", MessageSid: "SM9" };
    expect(providerSignature(token, url, params)).toBe(twilio.getExpectedTwilioSignature(token, url, params));
  });

  test("a different URL, token or field value gives a different signature", () => {
    const params = { From: "+15551234567", Body: "x" };
    const sig = providerSignature(token, url, params);
    expect(providerSignature(token, "http://localhost:3001/api/provider/sms", params)).not.toBe(sig);
    expect(providerSignature("other-token", url, params)).not.toBe(sig);
    expect(providerSignature(token, url, { ...params, Body: "y" })).not.toBe(sig);
    expect(verifyProviderSignature(token, url, params, sig)).toBe(true);
    expect(verifyProviderSignature(token, url, params, null)).toBe(false);
    expect(verifyProviderSignature(token, url, { ...params, Body: "y" }, sig)).toBe(false);
  });
});
