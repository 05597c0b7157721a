import { type Api, ApiError, type Device, type RegisterRequest, type SimCard } from "./api";
import { sendThroughProvider } from "./provider";

export type Registration = RegisterRequest & { numbers: string[] };

/**
 * Registers the phone. A phone that registered before (same android_id, e.g. a restarted
 * simulator) gets 409 with its device_id and carries on with that device, as the app would.
 */
export async function registerDevice(api: Api, reg: Registration, knownId?: number, onResume?: () => void): Promise<Device> {
  if (knownId) return api.getDevice(knownId);
  const { numbers: _numbers, ...body } = reg;
  try {
    return await api.register(body);
  } catch (e) {
    if (e instanceof ApiError && e.code === "device_already_registered" && e.body?.device_id) {
      onResume?.();
      return api.getDevice(e.body.device_id);
    }
    throw e;
  }
}

export type VerifyOptions = { providerUrl: string; pollMs: number; timeoutMs: number; attempts?: number };

/**
 * Proves each pending SIM: texts its code from the SIM's own number to the provider number,
 * then waits for the card to turn active. A code that got no answer in time is reissued and
 * sent again (the server expires codes after 5 minutes anyway).
 */
export async function verifySims(api: Api, device: Device, reg: Registration, opts: VerifyOptions): Promise<Device> {
  let current = device;
  for (let attempt = 1; attempt <= (opts.attempts ?? 3); attempt++) {
    const pending = current.sim_cards.filter((c) => c.status !== "active");
    if (pending.length === 0) return current;
    for (const card of pending) await sendCode(api, current, card, reg, opts.providerUrl, attempt > 1);
    current = await waitForActive(api, current.id, opts);
  }
  return current;
}

async function sendCode(api: Api, device: Device, card: SimCard, reg: Registration, providerUrl: string, reissue: boolean) {
  const code = !reissue && card.verification_code ? card.verification_code : (await api.reissueCode(device.id, card.id)).verification_code;
  const from = numberForSlot(reg, card.sim_slot);
  const to = card.provider_number ?? device.provider_number;
  if (!code || !from || !to) throw new Error(`SIM card ${card.id} of device ${device.id} has no code, number or provider number`);
  await sendThroughProvider(providerUrl, { from, to, body: code });
}

async function waitForActive(api: Api, id: number, opts: VerifyOptions): Promise<Device> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const device = await api.getDevice(id);
    if (device.sim_cards.every((c) => c.status === "active") || Date.now() >= deadline) return device;
    await Bun.sleep(opts.pollMs);
  }
}

export function numberForSlot(reg: Registration, slot: number | null): string | undefined {
  const index = reg.sim_slots.indexOf(slot ?? reg.sim_slots[0]!);
  return reg.numbers[index];
}
