import { afterAll, describe, expect, test } from "bun:test";
import twilio from "twilio";
import { forwardToServer, sendThroughProvider, startProvider } from "../../device-sim/provider";

const token = "provider-test-token";
const callbacks: { form: Record<string, string>; valid: boolean }[] = [];
// Stands in for the server's callback: checks the signature with the twilio library, as an outside party would.
const server = Bun.serve({
  port: 0,
  async fetch(req) {
    const form = Object.fromEntries(new URLSearchParams(await req.text()));
    const valid = twilio.validateRequest(token, req.headers.get("x-provider-signature") ?? "", "https://sims.example.test/api/provider/sms", form);
    callbacks.push({ form, valid });
    return new Response("<Response/>", { status: valid ? 200 : 403, headers: { "content-type": "text/xml" } });
  },
});
const serverUrl = `http://127.0.0.1:${server.port}`;
const provider = startProvider({ port: 0, serverUrl, publicUrl: "https://sims.example.test", authToken: token, providerNumber: "+15005550006", seed: 1 });
afterAll(() => {
  provider.stop();
  server.stop(true);
});

describe("emulated provider", () => {
  test("a send again under the same Idempotency-Key answers the first sid and sends nothing more; another key sends", async () => {
    const own = startProvider({ port: 0, serverUrl, publicUrl: "https://sims.example.test", authToken: token, providerNumber: "+15005550006", seed: 2 });
    const post = (key: string) =>
      fetch(`${own.url}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ from: "+15005550006", to: "+15557770100", body: "once" }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { sid: string } }));
    try {
      const first = await post("simhost-message-1");
      const again = await post("simhost-message-1");
      expect(first.status).toBe(201);
      expect(again).toEqual(first);
      expect(own.sent.length).toBe(1);
      expect((await post("simhost-message-2")).body.sid).not.toBe(first.body.sid);
      expect(own.sent.length).toBe(2);
    } finally {
      own.stop();
    }
  });

  test("an SMS a phone sends is posted to the server's callback with a signature over its PUBLIC_URL", async () => {
    const r = await sendThroughProvider(provider.url, { from: "+15551234567", to: "+15005550006", body: "SIM-AB2C" });
    expect(r.callback_status).toBe(200);
    const last = callbacks.at(-1)!;
    expect(last.valid).toBe(true);
    expect(last.form).toMatchObject({ From: "+15551234567", To: "+15005550006", Body: "SIM-AB2C", MessageSid: r.sid });
    expect(last.form.AccountSid).toMatch(/^AC/);
    expect(r.sid).toMatch(/^SM[0-9a-f]{32}$/);
  });

  test("message ids are new on every run, whatever the seed: a second run with the same seed is not taken for repeats of the first", async () => {
    const run = () => startProvider({ port: 0, serverUrl, publicUrl: "https://sims.example.test", authToken: token, providerNumber: "+15005550006", seed: 7 });
    const [one, two] = [run(), run()];
    try {
      const sms = { from: "+15551234567", to: "+15005550006", body: "SIM-AB2C" };
      const first = await sendThroughProvider(one.url, sms);
      const second = await sendThroughProvider(two.url, sms);
      expect(second.sid).not.toBe(first.sid);
    } finally {
      one.stop();
      two.stop();
    }
  });

  test("an SMS the provider itself refuses says so, not a callback status", async () => {
    const sent = sendThroughProvider(provider.url, { from: "12345", to: "+15005550006", body: "x" });
    await expect(sent).rejects.toThrow("provider answered 422: it refused the SMS from 12345 to +15005550006: Send JSON { from (E.164), to, body }.");
  });

  test("a wrong token is refused by the server and reported to the phone", async () => {
    const r = await forwardToServer(
      { serverUrl, publicUrl: "https://sims.example.test", authToken: "not-the-token", accountSid: "AC1" },
      { from: "+15551234567", to: "+1555", body: "x" },
      "SM1",
    );
    expect(r.status).toBe(403);
    expect(callbacks.at(-1)!.valid).toBe(false);
  });

  test("the outbound API takes the Bearer token, validates, records and lists what was sent", async () => {
    const post = (body: unknown, auth = `Bearer ${token}`) =>
      fetch(`${provider.url}/messages`, { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body: JSON.stringify(body) });
    const ok = await post({ from: "+15005550010", to: "+15551234567", body: "hello" });
    expect(ok.status).toBe(201);
    const sent = (await ok.json()) as { sid: string; status: string };
    expect(sent.status).toBe("queued");
    expect((await post({ from: "+15005550010", to: "+15551234567", body: "x" }, "Bearer wrong")).status).toBe(401);
    expect((await post({ from: "+15005550010", to: "not a number", body: "x" })).status).toBe(422);
    const list = (await (await fetch(`${provider.url}/messages`)).json()) as { data: { sid: string; body: string }[] };
    expect(list.data).toEqual([expect.objectContaining({ sid: sent.sid, body: "hello", to: "+15551234567" })]);
  });
});
