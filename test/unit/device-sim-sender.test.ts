import { describe, expect, test } from "bun:test";
import type { OutboundFigures } from "../../device-sim/fleet-outbound";
import { type FleetReport, failuresOf } from "../../device-sim/fleet-report";
import { createRandom } from "../../device-sim/random";
import { createSender, type ReportResult, type SendOrder } from "../../device-sim/sender";
import { createStats } from "../../device-sim/stats";

/** A sender whose reports and radio are recorded; `refuse` names messages the server has ended (409 on their first report). */
function phone(opts: { failRate?: number; refuse?: number[]; up?: boolean } = {}) {
  const reports: string[] = [];
  const onAir: number[] = [];
  const duplicates: number[] = [];
  const stats = createStats();
  let up = opts.up ?? true;
  const sender = createSender({
    rng: createRandom(7),
    stats,
    failRate: opts.failRate ?? 0,
    holdMs: () => 0,
    deliveryMs: () => 0,
    isUp: () => up,
    report: async (id, status, error): Promise<ReportResult> => {
      if (opts.refuse?.includes(id)) return "refused";
      reports.push(`${id} ${status}${error ? ` ${error}` : ""}`);
      return "ok";
    },
    transmit: async (order: SendOrder) => void onAir.push(order.id),
    events: { onDuplicateOrder: (id) => duplicates.push(id) },
  });
  const order = (id: number) => sender.order({ id, to: "+15550001111", text: `m${id}` });
  const settled = async (what: () => boolean) => {
    const deadline = Date.now() + 5000;
    while (!what() && Date.now() < deadline) await Bun.sleep(5);
    return what();
  };
  return { sender, order, reports, onAir, duplicates, stats, settled, setUp: (v: boolean) => (up = v) };
}

describe("device-sim sender (the phone's outbound radio)", () => {
  test("reports sending before going on air, then sent and delivered", async () => {
    const p = phone();
    p.order(1);
    expect(await p.settled(() => p.reports.length === 3)).toBe(true);
    expect(p.reports).toEqual(["1 sending", "1 sent", "1 delivered"]);
    expect(p.onAir).toEqual([1]);
  });

  test("a repeated order is never sent twice; once the message was taken, it is counted as a duplicate", async () => {
    const p = phone();
    p.order(2);
    p.order(2);
    expect(p.stats.get("outbound.reordered")).toBe(1);
    expect(await p.settled(() => p.reports.includes("2 delivered"))).toBe(true);
    expect(p.duplicates).toEqual([]);
    p.order(2);
    expect(p.duplicates).toEqual([2]);
    expect(p.onAir).toEqual([2]);
  });

  test("a message the server has ended (409 on `sending`) is never sent; a cancelled order is dropped", async () => {
    const p = phone({ refuse: [3], up: false });
    p.order(3);
    p.order(4);
    p.sender.cancel(4);
    p.order(5);
    expect(p.sender.pending()).toBe(2);
    p.setUp(true);
    p.sender.resume();
    expect(await p.settled(() => p.reports.includes("5 delivered"))).toBe(true);
    expect(p.onAir).toEqual([5]);
    expect(p.stats.get("outbound.refused")).toBe(1);
    expect(p.stats.get("outbound.cancelled")).toBe(1);
  });

  test("offline: orders wait, none is lost, all go out when the network is back", async () => {
    const p = phone({ up: false });
    for (let id = 10; id < 20; id++) p.order(id);
    expect(p.sender.pending()).toBe(10);
    expect(p.onAir).toEqual([]);
    p.setUp(true);
    p.sender.resume();
    expect(await p.settled(() => p.onAir.length === 10)).toBe(true);
    expect(p.onAir).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  test("with a failure rate the radio fails about that share, each reported failed with a reason and not sent", async () => {
    const p = phone({ failRate: 0.3 });
    for (let id = 100; id < 300; id++) p.order(id);
    expect(await p.settled(() => p.stats.get("outbound.failed") + p.stats.get("outbound.sent") === 200)).toBe(true);
    const failed = p.reports.filter((r) => / failed RESULT_ERROR_[A-Z_]+$/.test(r));
    expect(failed.length).toBe(p.stats.get("outbound.failed"));
    expect(failed.length).toBeGreaterThan(30);
    expect(failed.length).toBeLessThan(90);
    expect(p.onAir.length).toBe(200 - failed.length);
  });
});

const figures = (over: Partial<OutboundFigures> = {}): OutboundFigures => ({
  accepted: 50,
  refused: 0,
  sent: 45,
  delivered: 45,
  failed: 4,
  expired: 1,
  cancelled: 0,
  duplicated: 0,
  lost: 0,
  phones: { sent: 45, delivered: 45, failed: 4, cancelled: 0, refused: 1 },
  ...over,
});

const report = (outbound: OutboundFigures): FleetReport => ({
  seed: 1,
  duration_s: 10,
  devices: { requested: 2, registered: 2, resumed: 0, verified: 2, unverified: 0, online: 2, revoked: 0, failed_to_start: 0 },
  sms: { received: 0, acknowledged: 0, refused: 0, pending: 0, visible: 0, not_visible: 0, lost: 0 },
  heartbeats: 4,
  outbound,
  errors: {},
  latency_ms: {},
  failures: [],
  passed: false,
});

describe("fleet report judge (outbound)", () => {
  test("failed and expired sends are outcomes: the run passes", () => {
    expect(failuresOf(report(figures()))).toEqual([]);
  });

  test("a duplicate or a lost message fails the run", () => {
    expect(failuresOf(report(figures({ duplicated: 1 })))).toEqual(["1 outbound messages ordered or sent twice"]);
    expect(failuresOf(report(figures({ lost: 2 })))).toEqual(["2 accepted outbound messages never reached a final status"]);
  });
});
