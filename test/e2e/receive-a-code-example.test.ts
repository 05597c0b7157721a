import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { type Provider, sendThroughProvider, startProvider } from "../../device-sim/provider";
import { createApiKey, createTenant } from "../fixtures";
import { createTestContext, type TestContext } from "../helpers";
import { CHROMIUM, launchChromium, warnIfNoChromium } from "./browser";
import { attachNumber } from "./cli-helpers";

/**
 * Issue 17 item 5: the example of docs/receive-a-code.md "A complete example", run in CI.
 * A browser signs up on a local app with a simhost number, the test waits for the texted code
 * through the public HTTP API (plain fetch and an API key, nothing else) and types it in.
 * Around it, the parts a real setup has elsewhere: the simhost server, the SMS provider
 * (device-sim's emulator: an SMS sent to it reaches simhost by the provider's signed callback),
 * and the app under test.
 */
warnIfNoChromium("receive-a-code example");

/** The app under test texts its codes from this number. */
const APP_SENDER = "+15550002222";

// ---------------------------------------------------------------------------------------------
// The app under test: a sign-up page that texts a 6-digit code and a form that checks it.
// ---------------------------------------------------------------------------------------------
function startApp(providerUrl: string) {
  const codes = new Map<string, string>();
  const page = (body: string) => new Response(`<!doctype html><html><body>${body}</body></html>`, { headers: { "content-type": "text/html" } });
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    routes: {
      "/": () => page(`<form method="post" action="/signup"><input name="phone" placeholder="Phone"><button>Sign up</button></form>`),
      "/signup": {
        POST: async (req) => {
          const phone = String((await req.formData()).get("phone"));
          const code = String(crypto.getRandomValues(new Uint32Array(1))[0]! % 1_000_000).padStart(6, "0");
          codes.set(phone, code);
          await sendThroughProvider(providerUrl, { from: APP_SENDER, to: phone, body: `Your Acme code is ${code}` });
          return page(
            `<form method="post" action="/verify"><input type="hidden" name="phone" value="${phone}">` +
              `<input name="code" placeholder="Code"><button>Verify</button></form>`,
          );
        },
      },
      "/verify": {
        POST: async (req) => {
          const form = await req.formData();
          const ok = codes.get(String(form.get("phone"))) === String(form.get("code"));
          return page(`<p id="result">${ok ? "Verified" : "Wrong code"}</p>`);
        },
      },
    },
  });
}

// ---------------------------------------------------------------------------------------------
// The user's side: a few calls of simhost's HTTP API with an API key.
// ---------------------------------------------------------------------------------------------
function simhostApi(baseUrl: string, apiKey: string) {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${baseUrl}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
}

type Message = { id: number; from: string; text: string; code: string | null };

let ctx: TestContext;
let provider: Provider;
let app: ReturnType<typeof startApp>;
let browser: Browser | undefined;
let simhostUrl: string;

beforeAll(async () => {
  ctx = await createTestContext();
  simhostUrl = `http://127.0.0.1:${ctx.app.listen({ port: 0, hostname: "127.0.0.1" }).server!.port}`;
  ctx.services.start();
  provider = startProvider({
    port: 0,
    serverUrl: simhostUrl,
    publicUrl: ctx.config.PUBLIC_URL,
    authToken: ctx.config.PROVIDER_AUTH_TOKEN,
    providerNumber: ctx.config.PROVIDER_NUMBER,
  });
  app = startApp(provider.url);
  if (CHROMIUM) browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  app?.stop(true);
  provider?.stop();
  await ctx?.app.stop();
  await ctx?.close();
});

describe.skipIf(!CHROMIUM)("docs/receive-a-code.md: a complete example", () => {
  test("signs up in a browser, waits for the texted code through the API and types it in", async () => {
    // Once (in real life: the dashboard or the API): a number of the organization and an API key.
    const { org } = await createTenant(ctx.sql);
    const number = await attachNumber(ctx, org.id);
    const { key } = await createApiKey(ctx.sql, org.id, ["numbers.read", "numbers.lock", "messages.read"]);
    const api = simhostApi(simhostUrl, key);

    // 1. Lock the number for this run; the app's SMS releases the lock.
    await api("POST", `/numbers/${number.id}/lock`, { release_on_message: true, sender: APP_SENDER, duration_seconds: 300 });
    // Then the newest message you can see: the wait answers only later ones, all of them under your lock.
    const newest = await api<{ data: Message[] }>("GET", `/messages?hosted_sim=${number.id}&per_page=1`);
    const after = newest.data[0]?.id ?? 0;
    const page = await browser!.newPage();
    try {
      // 2. Trigger: sign up with the number in the app under test.
      await page.goto(`http://127.0.0.1:${app.port}/`);
      await page.fill("input[name=phone]", number.number);
      await page.click("button");
      await page.waitForSelector("input[name=code]");

      // 3. Wait for the SMS with a code: answered as soon as it is stored (or { data: null } after 30 s).
      const next = await api<{ data: Message | null }>("GET", `/numbers/${number.id}/messages/next?after=${after}&has_code=true&timeout=30`);
      expect(next.data).toMatchObject({ from: APP_SENDER });
      const code = next.data!.code!;
      expect(code).toMatch(/^\d{6}$/);

      // Type it in: the app says the phone is verified.
      await page.fill("input[name=code]", code);
      await page.click("button");
      expect(await page.textContent("#result")).toBe("Verified");
    } finally {
      await page.close();
      // 4. Teardown, always: frees the number when no SMS released the lock (200 also when it is gone;
      //    409 number_locked when another organization has locked it since: nothing of yours to free).
      await api("POST", `/numbers/${number.id}/unlock`).catch((e: Error) => {
        if (!e.message.includes(": 409 ")) throw e;
      });
    }
  }, 60_000);
});
