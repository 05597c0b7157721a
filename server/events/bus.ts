import Redis from "ioredis";
import type { Logger } from "../lib/logger";
import { REDIS_CLIENT_OPTIONS } from "../lib/redis-guard";

/** One internal message on one channel, as every instance sees it. */
export type BusMessage = { channel: string; event: string; data: unknown; origin: string };
export type Publish = (channels: string | string[], event: string, data: unknown) => void;

/**
 * Fan-out between server instances, for internal traffic only: the event log's wake-ups
 * (events/tail.ts) and device status news (devices/runtime.ts). Events for clients are rows of
 * the log, which every instance reads itself; they never travel here. `local` delivers in this
 * process only; `redis` publishes on Redis pub/sub (separate publisher and subscriber
 * connections) so every instance receives it. Subscribers get every message, local or remote, once.
 */
export type Bus = {
  kind: "local" | "redis";
  publish: Publish;
  subscribe(listener: (message: BusMessage) => void): () => void;
  /**
   * Runs `listener` each time the bus (re)joins the other instances: messages published while it
   * was cut off never reach it, so whoever relies on them (revocations) checks again.
   */
  onResumed(listener: () => void): () => void;
  /** Redis round trip, or a constant for the local bus. */
  ping(): Promise<void>;
  /** Resolves once connected (or after `ms` if Redis is not reachable: the server starts degraded). */
  ready(ms?: number): Promise<void>;
  close(): Promise<void>;
};

export function createLocalBus(origin: string): Bus {
  const listeners = new Set<(m: BusMessage) => void>();
  return {
    kind: "local",
    publish(channels, event, data) {
      for (const channel of Array.isArray(channels) ? channels : [channels]) {
        const message = { channel, event, data, origin };
        for (const l of listeners) l(message);
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onResumed: () => () => {},
    ping: async () => {},
    ready: async () => {},
    close: async () => listeners.clear(),
  };
}

export function createRedisBus(opts: { url: string; prefix: string; origin: string; logger: Logger }): Bus {
  const topic = `${opts.prefix}events`;
  // Fail fast while disconnected: a publish falls back to this instance at once (REDIS_CLIENT_OPTIONS).
  const connect = () => new Redis(opts.url, REDIS_CLIENT_OPTIONS);
  const pub = connect();
  const sub = connect();
  const local = createLocalBus(opts.origin);
  const resumed = new Set<() => void>();
  const silence = (e: Error) => opts.logger.debug({ err: e.message }, "redis connection error");
  pub.on("error", silence);
  sub.on("error", silence);
  // (Re)subscribe on every connect: a Redis restart drops subscriptions. The first connect
  // resumes too: an instance that started without Redis may have missed revocations as well.
  sub.on(
    "ready",
    () =>
      void sub.subscribe(topic).then(() => {
        for (const l of resumed) l();
      }, silence),
  );
  sub.on("message", (_channel: string, raw: string) => {
    try {
      const m = JSON.parse(raw) as BusMessage;
      local.publish(m.channel, m.event, m.data);
    } catch {
      opts.logger.warn("dropped a malformed bus message");
    }
  });
  return {
    kind: "redis",
    publish(channels, event, data) {
      const list = Array.isArray(channels) ? channels : [channels];
      if (pub.status !== "ready") {
        // Redis is down: deliver on this instance at least; other instances miss it.
        local.publish(list, event, data);
        return;
      }
      for (const channel of list) {
        const message: BusMessage = { channel, event, data, origin: opts.origin };
        pub.publish(topic, JSON.stringify(message)).catch(() => local.publish(channel, event, data));
      }
    },
    subscribe: local.subscribe,
    onResumed(listener) {
      resumed.add(listener);
      return () => resumed.delete(listener);
    },
    async ping() {
      const answer = await pub.ping();
      if (answer !== "PONG") throw new Error(`unexpected answer ${answer}`);
    },
    async ready(ms = 3000) {
      const connected = (c: Redis) => (c.status === "ready" ? Promise.resolve() : new Promise<void>((resolve) => c.once("ready", () => resolve())));
      const subscribed = new Promise<void>((resolve) => {
        if (sub.status === "ready")
          void sub.subscribe(topic).then(
            () => resolve(),
            () => resolve(),
          );
        else
          sub.once(
            "ready",
            () =>
              void sub.subscribe(topic).then(
                () => resolve(),
                () => resolve(),
              ),
          );
      });
      await Promise.race([Promise.all([connected(pub), subscribed]), Bun.sleep(ms)]);
    },
    async close() {
      await local.close();
      pub.disconnect();
      sub.disconnect();
    },
  };
}
