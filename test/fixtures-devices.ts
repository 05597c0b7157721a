import { randomBytes } from "node:crypto";
import { buildApp } from "../server/app";
import type { Config } from "../server/config";
import type { Clock } from "../server/lib/clock";
import type { Logger } from "../server/lib/logger";
import { providerSignature } from "../server/provider/signature";
import { createServices, type Services } from "../server/services";
import { checkedRequests, type TestContext } from "./helpers";

export const randomAndroidId = () => randomBytes(8).toString("hex");

/** A random E.164 number for a device SIM (+1 8 and 10 digits, apart from the pool's +1 9...). */
export function randomSimNumber(): string {
  const digits = Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) => String(b % 10)).join("");
  return `+18${digits}`;
}

type Ctx = Pick<TestContext, "request" | "config">;

export async function registerDevice(ctx: Ctx, token: string, slots: number[] = [1], extra: Record<string, unknown> = {}) {
  const res = await ctx.request("POST", "/api/byos/devices/register", {
    token,
    body: { android_id: randomAndroidId(), sim_slots: slots, device_model: "Pixel 8", app_version: "1.4.2", device_name: "test phone", ...extra },
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  return res.body as { id: number; status: string; provider_number: string; sim_cards: { id: number; sim_slot: number; verification_code: string }[] };
}

/** Posts form fields to the provider callback, signed as the provider would sign them. */
export function providerPost(ctx: Ctx, fields: Record<string, string>, opts: { signature?: string; token?: string; path?: string } = {}) {
  const path = opts.path ?? "/api/provider/sms";
  const signature = opts.signature ?? providerSignature(opts.token ?? ctx.config.PROVIDER_AUTH_TOKEN, `${ctx.config.PUBLIC_URL}${path}`, fields);
  return ctx.request("POST", path, { form: fields, headers: { "x-provider-signature": signature } });
}

export function verificationSms(ctx: Ctx, code: string, from: string, sid = `SM${randomBytes(16).toString("hex")}`) {
  return providerPost(ctx, { From: from, To: ctx.config.PROVIDER_NUMBER, Body: `Verify ${code}`, MessageSid: sid, AccountSid: "AC0123456789" });
}

/** Registers a device and verifies its SIM cards; returns the device and the numbers of its slots. */
export async function activeDevice(ctx: Ctx, token: string, slots: number[] = [1]) {
  const device = await registerDevice(ctx, token, slots);
  const numbers: string[] = [];
  for (const card of device.sim_cards) {
    const number = randomSimNumber();
    const res = await verificationSms(ctx, card.verification_code, number);
    if (res.status !== 200) throw new Error(`verification failed: ${res.status} ${res.text}`);
    numbers.push(number);
  }
  return { device, numbers };
}

export const smsBody = (over: Record<string, unknown> = {}) => ({
  from: "+15550001111",
  body: `hello ${crypto.randomUUID()}`,
  message_id: crypto.randomUUID(),
  received_at: new Date().toISOString(),
  sim_slot: 1,
  ...over,
});

/**
 * A second set of services on the shared test database with its own clock (a fake one for
 * timing tests) and settings; `close` leaves the shared database open.
 */
export async function clockedContext(base: TestContext, clock: Clock, env: Partial<Config> = {}, opts: { logger?: Logger } = {}) {
  const config = { ...base.config, ...env } as Config;
  const services = await createServices(config, { clock, database: { ...base.services.db, close: async () => {} }, logger: opts.logger });
  const app = buildApp(services);
  return { services, app, config, sql: services.sql, request: checkedRequests(app), close: () => services.close() };
}

/** Polls until `ok()` holds or the deadline passes (events over Redis arrive asynchronously). */
export async function waitFor(ok: () => boolean | Promise<boolean>, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/**
 * The device.status_changed events of one device an instance delivers over realtime, as
 * `online`/`offline`, appended to `seen` (pass one list to several instances to get their events in
 * the order delivered).
 */
export function watchPresence(services: Pick<Services, "realtime">, deviceId: number, seen: string[] = []) {
  services.realtime.watch((m) => {
    const d = m.data as { device_id?: number; is_online?: boolean };
    if (m.event === "device.status_changed" && m.channel === `private-device.${deviceId}` && d.device_id === deviceId)
      seen.push(d.is_online ? "online" : "offline");
  });
  return seen;
}
