import type { Random } from "./random";
import type { Stats } from "./stats";

/** A `message.send` order as the phone keeps it. */
export type SendOrder = { id: number; to: string; text: string; sim_slot?: number | null };

/** What a status report came to: accepted, or refused for good (409: the server has ended the message). */
export type ReportResult = "ok" | "refused";

export type SenderOptions = {
  rng: Random;
  stats: Stats;
  /** Share of sends the radio fails (no service, generic failure), reported `failed` with the reason. */
  failRate: number;
  /** How long the app holds an order before the radio takes it, and how long delivery takes (ms, already scaled). */
  holdMs: () => number;
  deliveryMs: () => number;
  /** The data network: reports need it; orders wait while it is down. */
  isUp: () => boolean;
  /** A status report; keeps trying while the server or the network is away. */
  report(id: number, status: "sending" | "sent" | "delivered" | "failed", error?: string): Promise<ReportResult>;
  /** The SMS over the air; throws when the network refuses it. */
  transmit(order: SendOrder): Promise<void>;
  events?: {
    /** An order for a message this phone has already taken (reported `sending`): the server dispatched it twice. */
    onDuplicateOrder?(id: number): void;
    onTransmitted?(id: number): void;
  };
};

/** Reasons Android's SmsManager gives for a send that did not go out. */
const RADIO_ERRORS = ["RESULT_ERROR_GENERIC_FAILURE", "RESULT_ERROR_NO_SERVICE", "RESULT_ERROR_RADIO_OFF", "RESULT_ERROR_LIMIT_EXCEEDED"];

/**
 * The phone's outbound side: orders (`message.send`) are queued and sent one at a time, as one
 * radio does. Each is reported `sending` before it goes on air, so a message the server has
 * ended meanwhile (cancelled, expired, failed by the pick-up timeout: 409) is never sent; then
 * `sent` or `failed`, and `delivered` when the network's delivery report comes. An order is
 * taken once: a repeat is ignored, and counted as the server's duplicate when the message was
 * already taken. While the data
 * network is down, orders wait (`resume` when it is back); `message.send_cancelled` drops an
 * order not yet on air.
 */
export function createSender(o: SenderOptions) {
  const known = new Map<number, "pending" | "cancelled" | "taken">();
  const queue: SendOrder[] = [];
  const deliveries = new Set<ReturnType<typeof setTimeout>>();
  let running = false;
  let stopped = false;

  function order(next: SendOrder) {
    const was = known.get(next.id);
    // An order repeated before the phone took the message (e.g. sent again when the phone came
    // back online) is harmless; one for a message already on its way means the server would have
    // it sent twice by a phone that kept no record.
    if (was === "taken") {
      o.stats.count("outbound.duplicate_orders");
      o.events?.onDuplicateOrder?.(next.id);
      return;
    }
    if (was !== undefined) return o.stats.count("outbound.reordered");
    known.set(next.id, "pending");
    o.stats.count("outbound.ordered");
    queue.push(next);
    void run();
  }

  function cancel(id: number) {
    if (known.get(id) !== "pending") return;
    known.set(id, "cancelled");
    o.stats.count("outbound.cancelled");
  }

  async function run() {
    if (running) return;
    running = true;
    try {
      while (queue.length > 0 && o.isUp() && !stopped) {
        const next = queue.shift()!;
        await Bun.sleep(o.holdMs());
        if (known.get(next.id) !== "pending") continue;
        known.set(next.id, "taken");
        await send(next).catch((e) => o.stats.error("outbound", (e as Error).message.slice(0, 80)));
      }
    } finally {
      running = false;
    }
  }

  async function send(next: SendOrder) {
    if ((await o.report(next.id, "sending")) === "refused") return o.stats.count("outbound.refused");
    if (o.rng.chance(o.failRate)) {
      o.stats.count("outbound.failed");
      return void (await o.report(next.id, "failed", o.rng.pick(RADIO_ERRORS)));
    }
    try {
      await o.transmit(next);
    } catch (e) {
      o.stats.count("outbound.failed");
      return void (await o.report(next.id, "failed", (e as Error).message.slice(0, 200)));
    }
    o.events?.onTransmitted?.(next.id);
    await o.report(next.id, "sent");
    o.stats.count("outbound.sent");
    const delivery = setTimeout(async () => {
      deliveries.delete(delivery);
      if ((await o.report(next.id, "delivered").catch(() => "refused")) === "ok") o.stats.count("outbound.delivered");
    }, o.deliveryMs());
    deliveries.add(delivery);
  }

  return {
    order,
    cancel,
    /** The network is back: carry on with the orders that waited. */
    resume: () => void run(),
    stop() {
      stopped = true;
      deliveries.forEach(clearTimeout);
    },
    /** Orders not yet on air (waiting for the network or the radio). */
    pending: () => queue.filter((q) => known.get(q.id) === "pending").length,
  };
}
export type Sender = ReturnType<typeof createSender>;
