import { type Api, hostedSimOf } from "./api";
import type { SimDevice } from "./device";
import type { OutboundFigures } from "./fleet-outbound";
import type { ReceivedSms } from "./outbox";
import type { Stats } from "./stats";

export type Tracked = { device: SimDevice; api: Api; sms: ReceivedSms; state: "queued" | "acknowledged" | "refused"; reason?: string };

export type VisibilityResult = { visible: number; missing: Tracked[]; unattributed: number };

/**
 * Checks that every acknowledged SMS can be read back through GET /api/messages on the hosted
 * SIM of the card it arrived on, as a customer would. Processing is asynchronous, so it polls
 * until everything is found or the deadline passes. Matching is by sender and text, counted,
 * so two identical texts need two messages.
 */
export async function checkVisibility(acknowledged: Tracked[], deadline: number): Promise<VisibilityResult> {
  const bySim = new Map<number, { api: Api; wanted: Tracked[] }>();
  let unattributed = 0;
  for (const t of acknowledged) {
    const card = t.device.snapshot().cards.find((c) => c.sim_slot === (t.sms.sim_slot ?? c.sim_slot));
    const hostedSim = card ? hostedSimOf(card) : null;
    if (!hostedSim) {
      unattributed++;
      continue;
    }
    const entry = bySim.get(hostedSim) ?? { api: t.api, wanted: [] };
    entry.wanted.push(t);
    bySim.set(hostedSim, entry);
  }
  let missing: Tracked[] = [];
  for (;;) {
    missing = [];
    for (const [hostedSim, { api, wanted }] of bySim) missing.push(...(await missingOn(api, hostedSim, wanted)));
    if (missing.length === 0 || Date.now() >= deadline) break;
    await Bun.sleep(1000);
  }
  const total = [...bySim.values()].reduce((n, e) => n + e.wanted.length, 0);
  return { visible: total - missing.length, missing, unattributed };
}

/** The SMS of `wanted` not among the number's messages, matched by the id the phone gave each (the message's external_id). */
async function missingOn(api: Api, hostedSim: number, wanted: Tracked[]): Promise<Tracked[]> {
  const seen = new Set<string>();
  for (let page = 1; page <= 100; page++) {
    const res = await api.messages({ hosted_sim: hostedSim, per_page: 100, page, direction: "inbound" }).catch(() => null);
    if (!res) return wanted;
    for (const m of res.data) if (m.external_id) seen.add(m.external_id.toLowerCase());
    const last = Number(res.meta?.last_page ?? (res.data.length < 100 ? page : page + 1));
    if (page >= last || res.data.length === 0) break;
  }
  return wanted.filter((t) => !seen.has(t.sms.message_id.toLowerCase()));
}

export type FleetReport = {
  seed: number;
  duration_s: number;
  /** resumed: registered by an earlier run with the same seed and account, carried on (409 device_already_registered). */
  devices: {
    requested: number;
    registered: number;
    resumed: number;
    verified: number;
    unverified: number;
    online: number;
    revoked: number;
    failed_to_start: number;
  };
  sms: { received: number; acknowledged: number; refused: number; pending: number; visible: number; not_visible: number; lost: number };
  heartbeats: number;
  outbound: OutboundFigures;
  errors: Record<string, number>;
  latency_ms: Record<string, { count: number; p50: number; p95: number; p99: number; max: number }>;
  failures: string[];
  passed: boolean;
};

export function formatReport(r: FleetReport): string {
  const o = r.outbound;
  const lines = [
    `fleet run: seed ${r.seed}, ${r.duration_s}s, ${r.passed ? "PASSED" : `FAILED: ${r.failures.join("; ")}`}`,
    `devices   requested ${r.devices.requested}  registered ${r.devices.registered} (resumed ${r.devices.resumed})  verified ${r.devices.verified}  unverified ${r.devices.unverified}  online ${r.devices.online}  revoked ${r.devices.revoked}  failed to start ${r.devices.failed_to_start}`,
    `sms       received ${r.sms.received}  acknowledged ${r.sms.acknowledged}  refused ${r.sms.refused}  still queued ${r.sms.pending}  visible ${r.sms.visible}  not visible ${r.sms.not_visible}  LOST ${r.sms.lost}`,
    `outbound  accepted ${o.accepted}  refused ${o.refused}  sent ${o.sent}  delivered ${o.delivered}  failed ${o.failed}  expired ${o.expired}  cancelled ${o.cancelled}  DUPLICATED ${o.duplicated}  LOST ${o.lost}`,
    `phones    sent ${o.phones.sent}  delivered ${o.phones.delivered}  failed ${o.phones.failed}  cancelled ${o.phones.cancelled}  refused by the server ${o.phones.refused}`,
    `heartbeats ${r.heartbeats}`,
    ...latencyAndErrorLines(r.latency_ms, r.errors),
  ];
  return lines.join("\n");
}

/** A run's latencies per operation and its errors by kind, as a table for people (a fleet's, or one device's). */
export function latencyAndErrorLines(latency: FleetReport["latency_ms"], errors: Record<string, number>): string[] {
  return [
    "latency (ms)        count     p50     p95     p99     max",
    ...Object.entries(latency).map(([op, l]) => `  ${op.padEnd(16)} ${String(l.count).padStart(7)} ${fmt(l.p50)} ${fmt(l.p95)} ${fmt(l.p99)} ${fmt(l.max)}`),
    Object.keys(errors).length ? "errors" : "errors: none",
    ...Object.entries(errors).map(([kind, n]) => `  ${String(n).padStart(7)}  ${kind}`),
  ];
}

const fmt = (n: number) => n.toFixed(1).padStart(7);

/** One line, rewritten in place on a terminal, for watching a run. */
export function progressLine(elapsedS: number, devices: SimDevice[], stats: Stats): string {
  const snaps = devices.map((d) => d.snapshot());
  const active = snaps.filter((s) => s.state === "active").length;
  const up = snaps.filter((s) => s.network && s.state === "active").length;
  const queued = snaps.reduce((n, s) => n + s.pending, 0);
  const sms = stats.latency("sms");
  return (
    `[${elapsedS.toFixed(0).padStart(4)}s] devices ${active}/${devices.length} active ${up} up | ` +
    `sms recv ${stats.get("sms.received")} ack ${stats.get("sms.acknowledged")} queued ${queued} refused ${stats.get("sms.refused")} | ` +
    `hb ${stats.get("heartbeats")} | errors ${stats.errorTotal()} | sms p50 ${sms.p50}ms p95 ${sms.p95}ms p99 ${sms.p99}ms`
  );
}

/**
 * Why a run counts as failed: anything lost (an SMS received, or an outbound message accepted
 * and never finished), anything sent twice, and any device that did not come up as a real
 * phone would. Failed and expired sends are outcomes, not failures of the run.
 */
export function failuresOf(r: FleetReport): string[] {
  const d = r.devices;
  const failures: string[] = [];
  if (r.outbound.duplicated > 0) failures.push(`${r.outbound.duplicated} outbound messages ordered or sent twice`);
  if (r.outbound.lost > 0) failures.push(`${r.outbound.lost} accepted outbound messages never reached a final status`);
  if (r.sms.pending > 0) failures.push(`${r.sms.pending} SMS never acknowledged`);
  if (r.sms.not_visible > 0) failures.push(`${r.sms.not_visible} acknowledged SMS not visible through GET /api/messages`);
  if (d.failed_to_start > 0) failures.push(`${d.failed_to_start} devices failed to start`);
  if (d.unverified > 0) failures.push(`${d.unverified} devices not verified`);
  if (d.online < d.verified - d.revoked) failures.push(`${d.verified - d.revoked - d.online} verified devices not online on the server`);
  return failures;
}

/** Online as the server sees it (GET /api/byos/devices), not as the simulator believes. */
export async function countOnline(members: { device: SimDevice; api: Api }[]): Promise<number> {
  const ours = new Set(members.map((m) => m.device.id()).filter(Boolean));
  const seen = new Map<number, boolean>();
  for (const api of new Set(members.map((m) => m.api))) {
    for (let page = 1; page <= 1000; page++) {
      const res = await api.listDevices({ per_page: 100, page }).catch(() => null);
      if (!res || res.data.length === 0) break;
      for (const d of res.data) if (ours.has(d.id)) seen.set(d.id, d.is_online === true);
      if (res.data.length < 100) break;
    }
  }
  return [...seen.values()].filter(Boolean).length;
}
