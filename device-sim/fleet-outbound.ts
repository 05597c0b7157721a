import { type Api, ApiError, hostedSimOf } from "./api";
import type { SimDevice } from "./device";
import { phoneNumber, type Random } from "./random";
import type { Stats } from "./stats";
import { randomText } from "./texts";

/** Statuses an outbound message ends in; anything else at the end of a run is a message lost. */
const FINAL = ["delivered", "failed", "expired", "cancelled"];

export type OutboundFigures = {
  /** POST /api/messages answered 202 (once per message, retries with the same Idempotency-Key included). */
  accepted: number;
  /** POST /api/messages refused (402, 409, ...): not a message. */
  refused: number;
  /** Of the accepted, by their status on the server at the end: went out (sent or delivered), and each final status. */
  sent: number;
  delivered: number;
  failed: number;
  expired: number;
  cancelled: number;
  /** `message.send` orders for a message a phone had already taken, plus messages sent on air by more than one phone. */
  duplicated: number;
  /** Accepted but not in a final status when the run settled. */
  lost: number;
  /** What the phones did, sends made outside the fleet (e.g. through the API by a test) included. */
  phones: { sent: number; delivered: number; failed: number; cancelled: number; refused: number };
};

export type OutboundOptions = {
  /** Sends per second across the fleet through POST /api/messages, from the fleet's own numbers. */
  rate: number;
  /** expires_at this long after each send (none when absent). */
  expiresInMs?: number;
};

type Sender = { device: SimDevice; api: Api };

/** The fleet's outbound side: what was accepted, and what the phones saw twice. */
export function createOutboundTracker(stats: Stats) {
  const accepted = new Map<number, Api>();
  const transmitted = new Map<number, number>();
  let duplicateOrders = 0;
  let refused = 0;

  /** One send, retried with the same Idempotency-Key while the answer is lost (network, 5xx). */
  async function send(from: Sender, rng: Random, o: OutboundOptions) {
    const card = from.device.snapshot().cards.find((c) => c.status === "active" && hostedSimOf(c) !== null);
    const hostedSim = card ? hostedSimOf(card) : null;
    if (hostedSim === null) return;
    // Unique per run, not drawn from the seed: a run repeated with its seed would send the first
    // run's keys, and the server would answer its sends with the first run's (sending nothing).
    const key = crypto.randomUUID();
    const body = {
      hosted_sim: hostedSim,
      to: phoneNumber(rng),
      text: randomText(rng),
      ...(o.expiresInMs ? { expires_at: new Date(Date.now() + o.expiresInMs).toISOString() } : {}),
    };
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await from.api.sendMessage(body, key);
        if ("id" in answer.data) accepted.set(answer.data.id, from.api);
        return;
      } catch (e) {
        if (!(e instanceof ApiError) || !e.retryable || attempt >= 3) {
          refused++;
          return;
        }
        await Bun.sleep(500 * attempt);
      }
    }
  }

  /** Sends at `rate` per second (Poisson) from a random live device; returns a stop function. */
  function start(o: OutboundOptions, rng: Random, live: () => Sender[]) {
    if (o.rate <= 0) return () => {};
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = () => {
      timer = setTimeout(
        () => {
          const pool = live();
          if (pool.length) void send(rng.pick(pool), rng, o);
          next();
        },
        rng.exponential(1000 / o.rate),
      );
    };
    next();
    return () => clearTimeout(timer);
  }

  /** Polls the accepted messages until every one is final or the deadline passes, and counts. */
  async function settle(deadline: number): Promise<OutboundFigures> {
    const statuses = new Map<number, string>();
    for (;;) {
      const open = [...accepted].filter(([id]) => !FINAL.includes(statuses.get(id) ?? ""));
      await Promise.all(open.map(async ([id, api]) => statuses.set(id, (await api.message(id).catch(() => null))?.status ?? statuses.get(id) ?? "unknown")));
      if ([...accepted.keys()].every((id) => FINAL.includes(statuses.get(id)!)) || Date.now() >= deadline) break;
      await Bun.sleep(500);
    }
    const count = (...names: string[]) => [...statuses.values()].filter((s) => names.includes(s)).length;
    return {
      accepted: accepted.size,
      refused,
      sent: count("sent", "delivered"),
      delivered: count("delivered"),
      failed: count("failed"),
      expired: count("expired"),
      cancelled: count("cancelled"),
      duplicated: duplicateOrders + [...transmitted.values()].filter((n) => n > 1).length,
      lost: accepted.size - count(...FINAL),
      phones: {
        sent: stats.get("outbound.sent"),
        delivered: stats.get("outbound.delivered"),
        failed: stats.get("outbound.failed"),
        cancelled: stats.get("outbound.cancelled"),
        refused: stats.get("outbound.refused"),
      },
    };
  }

  return {
    start,
    settle,
    /** Device events: a repeated order, a message on air (once per phone; more than one phone is a duplicate). */
    onDuplicateOrder: () => void duplicateOrders++,
    onTransmitted: (id: number) => void transmitted.set(id, (transmitted.get(id) ?? 0) + 1),
  };
}
export type OutboundTracker = ReturnType<typeof createOutboundTracker>;
