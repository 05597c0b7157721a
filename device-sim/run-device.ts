import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Credentials, createApi, signIn } from "./api";
import { createDevice } from "./device";
import { openOutbox, type ReceivedSms } from "./outbox";
import { deviceRegistration } from "./phones";
import { listenDeviceChannel } from "./pusher";
import { createRandom, type Random } from "./random";
import { createStats } from "./stats";
import type { Registration } from "./verify";

export type DeviceRunOptions = {
  serverUrl: string;
  providerUrl: string;
  credentials: Credentials;
  seed: number;
  stateDir?: string;
  slots?: number[];
  numbers?: string[];
  doze: boolean;
  listen: boolean;
  /** Share of outbound sends the radio fails. */
  outboundFailRate?: number;
  /** Mean gap between random incoming SMS; 0 for none. */
  smsEveryMs: number;
  /** Make this many SMS in all: the scripted ones (the first this many), then random ones at smsEveryMs. */
  smsCount?: number;
  script?: (Partial<ReceivedSms> & { atMs: number })[];
  durationMs?: number;
  /** Exit once every SMS was made and acknowledged (for tests and scripts). */
  exitWhenIdle: boolean;
  timeScale?: number;
  log: (line: string) => void;
};

/** The phone's identity is kept in the state folder, so a restarted simulator is the same phone. */
function loadIdentity(o: DeviceRunOptions, rng: Random): { reg: Registration; deviceId?: number; save(id: number): void } {
  const file = o.stateDir ? join(o.stateDir, "device.json") : undefined;
  if (file && existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8")) as { reg: Registration; device_id?: number };
    return { reg: saved.reg, deviceId: saved.device_id, save: (id) => writeFileSync(file, JSON.stringify({ reg: saved.reg, device_id: id }, null, 2)) };
  }
  const reg = deviceRegistration(rng, 0);
  if (o.slots) reg.sim_slots = o.slots;
  reg.numbers = reg.sim_slots.map((_, i) => o.numbers?.[i] ?? reg.numbers[i] ?? deviceRegistration(rng.fork(`n${i}`), 0).numbers[0]!);
  if (file) mkdirSync(o.stateDir!, { recursive: true });
  const save = (id: number) => file && writeFileSync(file, JSON.stringify({ reg, device_id: id }, null, 2));
  return { reg, save };
}

export async function runDevice(o: DeviceRunOptions) {
  const rng = createRandom(o.seed);
  const stats = createStats();
  const api = createApi({ baseUrl: o.serverUrl, stats });
  await signIn(api, o.credentials);
  const identity = loadIdentity(o, rng);
  const outbox = openOutbox(o.stateDir ? join(o.stateDir, "outbox.jsonl") : undefined);
  const device = createDevice({
    reg: identity.reg,
    deviceId: identity.deviceId,
    doze: o.doze,
    api,
    providerUrl: o.providerUrl,
    outbox,
    rng: rng.fork("device"),
    stats,
    timeScale: o.timeScale,
    outboundFailRate: o.outboundFailRate,
    events: {
      onState: (s) => o.log(`state ${s}`),
      onReceived: (sms) => o.log(`sms ${sms.message_id} received from ${sms.from} on slot ${sms.sim_slot}`),
      onAcknowledged: (sms) => o.log(`sms ${sms.message_id} acknowledged`),
      onRefused: (sms, reason) => o.log(`sms ${sms.message_id} refused: ${reason}`),
    },
  });
  const stopSignals = onSignals(() => finish());
  await device.start();
  identity.save(device.id()!);
  o.log(`device ${device.id()} ${device.snapshot().state}, SIMs ${identity.reg.numbers.join(", ")}`);
  const channel = o.listen ? await startListening(api, device, o) : undefined;

  let made = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const checkIdle = async () => {
    while (device.snapshot().pending > 0) await Bun.sleep(100);
    finish();
  };
  const limit = o.durationMs ? setTimeout(() => finish(), o.durationMs) : undefined;
  const stopSms = startSms(o, device, rng.fork("sms"), () => {
    made = true;
    if (o.exitWhenIdle) void checkIdle();
  });
  function finish() {
    clearTimeout(limit);
    stopSms();
    stopSignals();
    channel?.close();
    device.stop();
    resolveDone();
  }
  await done;
  const snap = device.snapshot();
  return {
    device_id: snap.id,
    state: snap.state,
    all_sms_made: made,
    pending: snap.pending,
    counters: stats.counters(),
    errors: stats.errors(),
    latency_ms: stats.latencies(),
  };
}

async function startListening(api: ReturnType<typeof createApi>, device: ReturnType<typeof createDevice>, o: DeviceRunOptions) {
  const l = await listenDeviceChannel(api, device.id()!, {
    onSend: (data) => {
      o.log(`message.send ${JSON.stringify(data)}`);
      device.sendOutbound(data);
    },
    onCancel: (id) => {
      o.log(`message.cancelled ${id}`);
      device.cancelOutbound(id);
    },
    onConfigChanged: () => void device.refreshConfig(),
    onOther: (event) => o.log(`event ${event}`),
  });
  await l.subscribed;
  o.log(`listening on private-device.${device.id()}`);
  return l;
}

/**
 * Scripted SMS at their times, and random ones at the given mean gap: up to smsCount in all, the
 * scripted ones first (a random SMS never takes a scripted one's place). `onAllMade` is called once
 * the last is made, at once when there is none to make.
 */
function startSms(o: DeviceRunOptions, device: ReturnType<typeof createDevice>, rng: Random, onAllMade: () => void) {
  const scripted = [...(o.script ?? [])].sort((a, b) => a.atMs - b.atMs).slice(0, o.smsCount);
  const max = o.smsCount ?? (o.smsEveryMs ? Number.POSITIVE_INFINITY : scripted.length);
  let made = 0;
  let randomLeft = max - scripted.length;
  const timers: ReturnType<typeof setTimeout>[] = [];
  const make = (input?: Partial<ReceivedSms>) => {
    device.receive(input);
    if (++made === max) onAllMade();
  };
  for (const { atMs, ...sms } of scripted) timers.push(setTimeout(() => make(sms), atMs));
  const random = () => {
    if (!o.smsEveryMs || randomLeft <= 0) return;
    timers.push(
      setTimeout(() => {
        randomLeft--;
        make();
        random();
      }, rng.exponential(o.smsEveryMs)),
    );
  };
  random();
  // From a timer as the others: the caller's stop function exists by then.
  if (max === 0) timers.push(setTimeout(onAllMade, 0));
  return () => timers.forEach(clearTimeout);
}

function onSignals(stop: () => void) {
  const handler = () => stop();
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  return () => {
    process.off("SIGINT", handler);
    process.off("SIGTERM", handler);
  };
}
