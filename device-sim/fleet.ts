import { type Api, ApiError, type Credentials, createApi, createLimiter, signIn } from "./api";
import { createDevice, type SimDevice } from "./device";
import { createOutboundTracker, type OutboundTracker } from "./fleet-outbound";
import { checkVisibility, countOnline, type FleetReport, failuresOf, formatReport, progressLine, type Tracked } from "./fleet-report";
import { type Outbox, openOutbox } from "./outbox";
import { deviceRegistration } from "./phones";
import { startProvider } from "./provider";
import { listenDeviceChannel } from "./pusher";
import { createRandom, type Random } from "./random";
import { runScenario, type Scenario, type ScenarioStep } from "./scenario";
import { createStats, type Stats } from "./stats";

export type FleetOptions = {
  serverUrl: string;
  accounts: Credentials[];
  devices: number;
  /** SMS per second arriving across the whole fleet (Poisson). */
  smsRate: number;
  dozeRatio: number;
  /** Share of the fleet that drops off the network per minute, for a spell averaging 30 s. */
  churn: number;
  durationMs: number;
  seed: number;
  scenario?: Scenario;
  /** A running `device-sim provider`; without it the fleet starts its own emulator (needs providerToken). */
  providerUrl?: string;
  providerToken?: string;
  providerNumber?: string;
  /** The server's PUBLIC_URL when it differs from serverUrl (the provider signature covers it). */
  publicUrl?: string;
  stateDir?: string;
  listen?: boolean;
  concurrency?: number;
  timeScale?: number;
  settleMs?: number;
  /** Outbound sends per second through the API from the fleet's numbers (0: none), and their expiry. */
  sendRate?: number;
  sendExpiresInMs?: number;
  /**
   * Messages per minute per SIM for the run: the fleet sets each account organization's sending
   * policy to it (no pause, no daily cap to speak of) before sending. Without it the
   * organization's policy stands, and sends beyond its pace wait (docs/sending.md).
   */
  sendPace?: number;
  /** Share of outbound sends the phones' radios fail. */
  sendFailRate?: number;
  progress?: (line: string) => void;
};

type Member = { device: SimDevice; api: Api; rng: Random; started: boolean; listener?: Listener };
type Listener = Awaited<ReturnType<typeof listenDeviceChannel>>;

export async function runFleet(o: FleetOptions): Promise<FleetReport> {
  const stats = createStats();
  const rng = createRandom(o.seed);
  const limiter = createLimiter(o.concurrency ?? 64);
  const apis = await signInAll(o, stats, limiter);
  if (o.sendPace) await Promise.all(apis.map((api) => api.setSendingPolicy(fastPolicy(o.sendPace!))));
  const provider = o.providerUrl ? undefined : startEmbeddedProvider(o);
  const providerUrl = o.providerUrl ?? provider!.url;
  const outbox = openOutbox(o.stateDir ? `${o.stateDir}/fleet-outbox.jsonl` : undefined);
  const tracked = new Map<string, Tracked>();
  const outbound = createOutboundTracker(stats);
  const members = createMembers(o, rng, apis, stats, outbox, providerUrl, tracked, outbound);
  const listeners: { close(): void }[] = [];
  const started = Date.now();
  const stopProgress = showProgress(o, members, stats, started);

  await startAll(o, members, stats, listeners);
  // The run's duration is its load's, from when every phone is up: a fleet slow to start would
  // otherwise lose the scenario's last steps (never run) and vary its SMS count with the start.
  const loadStarted = Date.now();
  const stopLoad = startLoad(o, rng, members, loadStarted);
  const stopSends = outbound.start({ rate: o.sendRate ?? 0, expiresInMs: o.sendExpiresInMs }, rng.fork("sends"), () => liveMembers(members));
  await Bun.sleep(Math.max(0, loadStarted + o.durationMs - Date.now()));
  stopSends();
  stopLoad();
  const report = await settle(o, members, tracked, stats, started, outbound);
  stopProgress();
  for (const m of members) m.device.stop();
  for (const l of listeners) l.close();
  provider?.stop();
  return report;
}

/** A sending policy at `perMinute` with no pause between messages and the largest daily cap. */
const fastPolicy = (perMinute: number) => ({ messages_per_minute: perMinute, min_delay_seconds: 0, max_delay_seconds: 0, daily_cap: 100_000 });

async function signInAll(o: FleetOptions, stats: Stats, limiter: ReturnType<typeof createLimiter>) {
  if (o.accounts.length === 0) throw new Error("a fleet needs at least one account (--account email:password)");
  return Promise.all(
    o.accounts.map(async (creds) => {
      const api = createApi({ baseUrl: o.serverUrl, stats, limiter });
      await signIn(api, creds);
      return api;
    }),
  );
}

function startEmbeddedProvider(o: FleetOptions) {
  if (!o.providerToken) throw new Error("without --provider-url the fleet runs its own provider and needs --provider-token (the server's PROVIDER_AUTH_TOKEN)");
  return startProvider({
    port: 0,
    serverUrl: o.serverUrl,
    publicUrl: o.publicUrl,
    authToken: o.providerToken,
    providerNumber: o.providerNumber ?? "+15005550006",
    seed: o.seed,
  });
}

function createMembers(
  o: FleetOptions,
  rng: Random,
  apis: Api[],
  stats: Stats,
  outbox: Outbox,
  providerUrl: string,
  tracked: Map<string, Tracked>,
  outbound: OutboundTracker,
) {
  return Array.from({ length: o.devices }, (_, i): Member => {
    const drng = rng.fork(`device-${i}`);
    const api = apis[i % apis.length]!;
    const reg = deviceRegistration(drng, i);
    const track = (sms: Tracked["sms"], state: Tracked["state"], reason?: string) => {
      const t = tracked.get(sms.message_id);
      if (t) Object.assign(t, { state, reason });
    };
    // A phone off the data network has no socket either: its listener closes and reopens with it.
    const onNetwork = (up: boolean) => (up ? member.listener?.pusher.connect() : member.listener?.pusher.disconnect());
    const device = createDevice({
      reg,
      doze: drng.chance(o.dozeRatio),
      outboundFailRate: o.sendFailRate,
      api,
      providerUrl,
      outbox,
      rng: drng,
      stats,
      timeScale: o.timeScale,
      events: {
        // Every SMS is tracked from the moment it reaches the phone.
        onReceived: (sms) => void (tracked.has(sms.message_id) || tracked.set(sms.message_id, { device, api, sms, state: "queued" })),
        onAcknowledged: (sms) => track(sms, "acknowledged"),
        onRefused: (sms, reason) => track(sms, "refused", reason),
        onNetwork,
        onDuplicateOrder: outbound.onDuplicateOrder,
        onTransmitted: outbound.onTransmitted,
      },
    });
    const member: Member = { device, api, rng: drng, started: false };
    return member;
  });
}

/** Brings devices up a few at a time, like phones being set up, not all in the same millisecond. */
async function startAll(o: FleetOptions, members: Member[], stats: Stats, listeners: { close(): void }[]) {
  let next = 0;
  const worker = async () => {
    while (next < members.length) {
      const m = members[next++]!;
      try {
        await m.device.start();
        m.started = true;
        if (o.listen) listeners.push((m.listener = await listen(m)));
      } catch (e) {
        stats.count("devices.failed_to_start");
        stats.error("start", e instanceof ApiError ? e.kind : (e as Error).message.slice(0, 80));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(32, members.length) }, worker));
}

async function listen(m: Member) {
  const d = m.device;
  const l = await listenDeviceChannel(m.api, d.id()!, {
    onSend: (data) => d.sendOutbound(data),
    onCancel: (id) => d.cancelOutbound(id),
    onConfigChanged: () => void d.refreshConfig(),
  });
  await l.subscribed;
  return l;
}

const liveMembers = (members: Member[]) => members.filter((m) => m.started && ["active", "verifying"].includes(m.device.snapshot().state));

/** SMS arrivals, churn and the scenario, until stopped. */
function startLoad(o: FleetOptions, rng: Random, members: Member[], started: number) {
  const load = rng.fork("load");
  const live = () => liveMembers(members);
  let arrival: ReturnType<typeof setTimeout> | undefined;
  const nextArrival = () => {
    if (o.smsRate <= 0) return;
    arrival = setTimeout(
      () => {
        const pool = live();
        if (pool.length) load.pick(pool).device.receive();
        nextArrival();
      },
      load.exponential(1000 / o.smsRate),
    );
  };
  nextArrival();
  const spells: ReturnType<typeof setTimeout>[] = [];
  const churn = setInterval(() => {
    for (const m of live()) {
      if (!m.device.snapshot().network || !load.chance(o.churn / 60)) continue;
      m.device.setNetwork(false);
      spells.push(setTimeout(() => m.device.setNetwork(true), Math.min(load.exponential(30_000), started + o.durationMs - Date.now())));
    }
  }, 1000);
  const cancelScenario = o.scenario ? runScenario(o.scenario, (step) => perform(step, load, members, live, spells)) : () => {};
  return () => {
    clearTimeout(arrival);
    clearInterval(churn);
    cancelScenario();
    spells.forEach(clearTimeout);
    for (const m of members) m.device.setNetwork(true);
  };
}

async function perform(step: ScenarioStep, rng: Random, members: Member[], live: () => Member[], spells: ReturnType<typeof setTimeout>[]) {
  const share = (list: Member[], percent: number) => shuffled(rng, list).slice(0, Math.round((list.length * percent) / 100));
  switch (step.action) {
    case "offline":
      for (const m of share(live(), step.percent)) {
        m.device.setNetwork(false);
        if (step.forMs !== undefined) spells.push(setTimeout(() => m.device.setNetwork(true), step.forMs));
      }
      break;
    case "online":
      for (const m of members) m.device.setNetwork(true);
      break;
    case "burst": {
      const pool = live();
      for (let i = 0; i < step.sms && pool.length; i++) rng.pick(pool).device.receive();
      break;
    }
    case "revoke": {
      const active = live().filter((m) => m.device.snapshot().state === "active");
      // The phone learns it at once (the app does on its next request): its report counts it revoked.
      for (const m of shuffled(rng, active).slice(0, step.devices)) {
        const revoked = await m.api.revoke(m.device.id()!).then(
          () => true,
          () => false,
        );
        if (revoked) await m.device.checkRevoked();
      }
      break;
    }
    case "doze":
      for (const m of share(live(), step.percent)) m.device.setDoze(true);
      break;
    case "wake":
      for (const m of members) m.device.setDoze(false);
  }
}

function shuffled<T>(rng: Random, list: T[]): T[] {
  const a = [...list];
  for (let i = a.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

function showProgress(o: FleetOptions, members: Member[], stats: Stats, started: number) {
  if (!o.progress) return () => {};
  const devices = members.map((m) => m.device);
  const tick = setInterval(() => o.progress!(progressLine((Date.now() - started) / 1000, devices, stats)), 1000);
  return () => clearInterval(tick);
}

/** Waits for outboxes to drain, then checks every acknowledged SMS through the API and counts what is missing. */
async function settle(
  o: FleetOptions,
  members: Member[],
  tracked: Map<string, Tracked>,
  stats: Stats,
  started: number,
  outbound: OutboundTracker,
): Promise<FleetReport> {
  const deadline = Date.now() + (o.settleMs ?? 60_000);
  while (members.some((m) => m.device.snapshot().pending > 0) && Date.now() < deadline) await Bun.sleep(250);
  await Promise.all(members.filter((m) => m.device.id()).map((m) => m.device.reload().catch(() => undefined)));
  const all = [...tracked.values()];
  const acknowledged = all.filter((t) => t.state === "acknowledged");
  const [visibility, sends] = await Promise.all([checkVisibility(acknowledged, deadline), outbound.settle(deadline)]);
  const online = await countOnline(members);
  const snaps = members.map((m) => m.device.snapshot());
  const pending = all.filter((t) => t.state === "queued").length;
  const notVisible = acknowledged.length - visibility.visible;
  const revoked = snaps.filter((s) => s.state === "revoked").length;
  // Only live devices get revoked by a scenario, so a revoked device had been verified.
  const verified = snaps.filter((s) => s.state === "active").length + revoked;
  const report: FleetReport = {
    seed: o.seed,
    duration_s: Math.round((Date.now() - started) / 100) / 10,
    devices: {
      requested: members.length,
      registered: snaps.filter((s) => s.id).length,
      resumed: stats.get("devices.resumed"),
      verified,
      unverified: snaps.filter((s) => s.id && s.state !== "active" && s.state !== "revoked").length,
      online,
      revoked,
      failed_to_start: stats.get("devices.failed_to_start"),
    },
    sms: {
      received: all.length,
      acknowledged: acknowledged.length,
      refused: all.length - acknowledged.length - pending,
      pending,
      visible: visibility.visible,
      not_visible: notVisible,
      lost: pending + notVisible,
    },
    heartbeats: stats.get("heartbeats"),
    outbound: sends,
    errors: stats.errors(),
    latency_ms: stats.latencies(),
    failures: [],
    passed: false,
  };
  report.failures = failuresOf(report);
  report.passed = report.failures.length === 0;
  return report;
}

export { deviceRegistration, formatReport };
