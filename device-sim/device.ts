import { type Api, ApiError, type Device } from "./api";
import type { Outbox, ReceivedSms } from "./outbox";
import { sendThroughProvider } from "./provider";
import type { SendEvent } from "./pusher";
import type { Random } from "./random";
import { createSender, type ReportResult } from "./sender";
import type { Stats } from "./stats";
import { randomSender, randomText } from "./texts";
import { numberForSlot, type Registration, registerDevice, verifySims } from "./verify";
import { driftVitals, initialVitals, reported } from "./vitals";

/** Where the phone is in its life; the network being up or down is separate (churn, outages). */
export type DeviceState = "new" | "registering" | "verifying" | "active" | "unverified" | "revoked" | "stopped";

export type DeviceEvents = {
  onState?(state: DeviceState): void;
  onReceived?(sms: ReceivedSms): void;
  onAcknowledged?(sms: ReceivedSms): void;
  /** The server refused it for good (revoked or disabled device, validation): not lost, but not delivered. */
  onRefused?(sms: ReceivedSms, reason: string): void;
  /** The data network went down or came back (a listener drops or reopens its socket). */
  onNetwork?(up: boolean): void;
  onDuplicateOrder?(messageId: number): void;
  onTransmitted?(messageId: number): void;
};

export type DeviceOptions = {
  reg: Registration;
  doze: boolean;
  deviceId?: number;
  api: Api;
  providerUrl: string;
  outbox: Outbox;
  rng: Random;
  stats: Stats;
  /** Multiplies every wait the server asks for (heartbeats, backoff): 0.1 makes a minute six seconds. */
  timeScale?: number;
  verifyTimeoutMs?: number;
  /** Share of outbound sends the radio fails (reported `failed` with an SmsManager reason). */
  outboundFailRate?: number;
  events?: DeviceEvents;
};

/** One restartable timer (after porsager/postgres): start re-arms, cancel disarms. */
export function timer(fn: () => void) {
  let t: ReturnType<typeof setTimeout> | undefined;
  return {
    start(ms: number) {
      clearTimeout(t);
      t = setTimeout(fn, Math.max(0, ms));
    },
    cancel: () => clearTimeout(t),
  };
}

const DEFAULT_BACKOFF = [5, 15, 60, 300];

export function createDevice(o: DeviceOptions) {
  const key = o.reg.android_id;
  const scale = o.timeScale ?? 1;
  let state: DeviceState = "new";
  let device: Device | undefined;
  let backoff = DEFAULT_BACKOFF;
  let heartbeatSeconds = 60;
  let networkUp = true;
  let doze = o.doze;
  let vitals = initialVitals(o.rng, o.reg.sim_slots.length);
  let vitalsAt = Date.now();
  let lastHeartbeatAt = 0;
  let heartbeatFailures = 0;
  let submitFailures = 0;
  let flushing = false;
  const heartbeatTimer = timer(() => void beat());
  const flushTimer = timer(() => void flush());
  const configTimer = timer(() => void refreshConfig());
  const seconds = (s: number) => s * 1000 * scale;
  const backoffMs = (attempt: number) => seconds(backoff[Math.min(attempt, backoff.length - 1)] ?? 60);
  const alive = () => state !== "stopped" && state !== "revoked";

  function setState(next: DeviceState) {
    state = next;
    o.events?.onState?.(next);
  }

  /**
   * Keeps trying while the server is away (the app would); gives up on a definite refusal, and
   * after a few tries on anything else (a provider that refuses our texts is a setup problem).
   */
  async function persist<T>(fn: () => Promise<T>): Promise<T> {
    let other = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        if (networkUp) return await fn();
      } catch (e) {
        if (e instanceof ApiError && !e.retryable) throw e;
        if (!(e instanceof ApiError) && ++other >= 3) throw e;
      }
      if (!alive()) throw new Error("device stopped");
      await Bun.sleep(backoffMs(attempt));
    }
  }

  async function start() {
    setState("registering");
    device = await persist(() => registerDevice(o.api, o.reg, o.deviceId, () => o.stats.count("devices.resumed")));
    // A pending device may heartbeat and submit already (API.md): its SMS wait for the SIM.
    void beat();
    void flush();
    setState("verifying");
    const verifyOpts = { providerUrl: o.providerUrl, pollMs: 250, timeoutMs: o.verifyTimeoutMs ?? 30_000 };
    device = await persist(() => verifySims(o.api, device!, o.reg, verifyOpts));
    if (!alive()) return;
    setState(device.sim_cards.some((c) => c.status === "active") ? "active" : "unverified");
    await refreshConfig();
  }

  async function refreshConfig() {
    if (!device || !alive()) return;
    try {
      const config = await o.api.config(device.id);
      if (config.intervals.retry_backoff_seconds?.length) backoff = config.intervals.retry_backoff_seconds;
      heartbeatSeconds = config.intervals.heartbeat_seconds || heartbeatSeconds;
      configTimer.start(seconds(config.intervals.config_refresh_seconds || 3600));
    } catch (e) {
      if (isGone(e)) return markRevoked();
      configTimer.start(backoffMs(0));
    }
  }

  function heartbeatBody() {
    const now = Date.now();
    vitals = driftVitals(vitals, (now - vitalsAt) / 1000 / scale, o.rng, doze);
    vitalsAt = now;
    const r = reported(vitals);
    const sims = o.reg.numbers.map((phone_number, i) => ({ phone_number, signal_strength: r.signal[i]! }));
    return { battery_level: r.battery_level, signal_strength: r.signal[0]!, is_in_doze_mode: doze, sim_cards: sims };
  }

  async function beat() {
    if (!device || !alive()) return;
    if (!networkUp) return heartbeatTimer.cancel();
    try {
      const answer = await o.api.heartbeat(device.id, heartbeatBody());
      heartbeatFailures = 0;
      lastHeartbeatAt = Date.now();
      o.stats.count("heartbeats");
      heartbeatTimer.start(seconds(answer.next_heartbeat_in || heartbeatSeconds));
    } catch (e) {
      if (isGone(e)) return markRevoked();
      heartbeatTimer.start(Math.min(backoffMs(heartbeatFailures++), seconds(heartbeatSeconds)));
    }
  }

  /** Submits the outbox oldest first, one at a time; stops at the first failure and retries after the backoff. */
  async function flush() {
    if (flushing || !device || !alive() || !networkUp) return;
    flushing = true;
    try {
      for (let next = o.outbox.pending(key)[0]; next && networkUp && alive(); next = o.outbox.pending(key)[0]) {
        if (!(await submit(next.sms, Date.parse(next.queued_at)))) break;
      }
    } finally {
      flushing = false;
    }
  }

  async function submit(sms: ReceivedSms, queuedAt: number): Promise<boolean> {
    try {
      await o.api.submitSms(device!.id, sms);
    } catch (e) {
      // 401 is the session, not the SMS: keep it queued (a signed-in-again app sends it later).
      if (!(e instanceof ApiError) || e.retryable || e.status === 401) {
        flushTimer.start(backoffMs(submitFailures++));
        return false;
      }
      o.outbox.ack(sms.message_id);
      o.stats.count("sms.refused");
      o.events?.onRefused?.(sms, e.kind);
      if (e.code === "invalid_state") void checkRevoked();
      return true;
    }
    submitFailures = 0;
    o.outbox.ack(sms.message_id);
    o.stats.count("sms.acknowledged");
    o.stats.observe("sms.end_to_end", Date.now() - queuedAt);
    o.events?.onAcknowledged?.(sms);
    return true;
  }

  /** An SMS arrives on the phone (GSM works without data): into the outbox first, then submitted. */
  function receive(input: Partial<ReceivedSms> = {}): ReceivedSms {
    const sms: ReceivedSms = {
      // Unique per run, not drawn from the seed: a run repeated with its seed on the same account
      // would send the same ids, which the server rightly takes as repeats of the first run's.
      message_id: input.message_id ?? crypto.randomUUID(),
      from: input.from ?? randomSender(o.rng),
      body: input.body ?? randomText(o.rng),
      received_at: input.received_at ?? new Date().toISOString(),
      sim_slot: input.sim_slot ?? o.rng.pick(o.reg.sim_slots),
    };
    o.outbox.add(key, sms);
    o.stats.count("sms.received");
    o.events?.onReceived?.(sms);
    void flush();
    return sms;
  }

  async function checkRevoked() {
    try {
      if ((await o.api.getDevice(device!.id)).status === "revoked") markRevoked();
    } catch (e) {
      if (isGone(e)) markRevoked();
    }
  }

  function markRevoked() {
    if (state === "revoked") return;
    cancelTimers();
    setState("revoked");
    for (const e of o.outbox.pending(key)) {
      o.outbox.ack(e.sms.message_id);
      o.stats.count("sms.refused");
      o.events?.onRefused?.(e.sms, "revoked");
    }
  }

  function cancelTimers() {
    heartbeatTimer.cancel();
    flushTimer.cancel();
    configTimer.cancel();
  }

  /** A status report on an outbound message; a 409 or 404 means the server has ended it (cancelled, expired, failed). */
  async function report(id: number, status: "sending" | "sent" | "delivered" | "failed", error?: string): Promise<ReportResult> {
    try {
      await persist(() => o.api.reportStatus(device!.id, id, status, error));
      return "ok";
    } catch (e) {
      if (e instanceof ApiError && (e.status === 409 || e.status === 404)) return "refused";
      throw e;
    }
  }

  const sender = createSender({
    rng: o.rng.fork("sender"),
    stats: o.stats,
    failRate: o.outboundFailRate ?? 0,
    holdMs: () => o.rng.int(100, 600) * scale,
    deliveryMs: () => o.rng.int(200, 2000) * scale,
    isUp: () => networkUp && alive() && device !== undefined,
    report,
    transmit: (order) =>
      sendThroughProvider(o.providerUrl, { from: numberForSlot(o.reg, order.sim_slot ?? null)!, to: order.to, body: order.text }).then(() => {}),
    events: { onDuplicateOrder: o.events?.onDuplicateOrder, onTransmitted: o.events?.onTransmitted },
  });

  /** `message.send` on the device channel: queued for the radio (sender.ts). */
  function sendOutbound(event: SendEvent) {
    const msg = event.message;
    if (!msg?.id || !msg.to) return;
    sender.order({ id: msg.id, to: msg.to, text: msg.text ?? "", sim_slot: msg.sim_slot });
  }

  return {
    key,
    start,
    receive,
    sendOutbound,
    /** `message.cancelled` on the device channel (a `message.send_cancelled` event): drop the order if not yet on air. */
    cancelOutbound: (id: number) => sender.cancel(id),
    refreshConfig,
    /** Asks the server whether the device was revoked (it may have been through the API), and stops serving it if so. */
    checkRevoked,
    /** Data network up or down; SMS keep arriving into the outbox meanwhile. */
    setNetwork(up: boolean) {
      if (networkUp === up) return;
      networkUp = up;
      o.events?.onNetwork?.(up);
      if (!up) return cancelTimers();
      void beat();
      void flush();
      sender.resume();
    },
    setDoze(on: boolean) {
      doze = on;
    },
    stop() {
      cancelTimers();
      sender.stop();
      if (alive()) setState("stopped");
    },
    id: () => device?.id,
    snapshot: () => ({
      key,
      id: device?.id,
      state,
      network: networkUp,
      doze,
      lastHeartbeatAt,
      cards: device?.sim_cards ?? [],
      pending: o.outbox.pending(key).length,
      outboundPending: sender.pending(),
    }),
    /** Re-reads the device (after verification the cards carry their hosted SIM ids). */
    reload: async () => (device = await o.api.getDevice(device!.id)),
  };
}
export type SimDevice = ReturnType<typeof createDevice>;

const isGone = (e: unknown) => e instanceof ApiError && (e.code === "invalid_state" || e.status === 404);
