import { readFileSync } from "node:fs";

/**
 * Limits of the WebSocket server (docs/events.md "Limits"). The transport ones are read by Bun
 * when the server starts (`websocketServerOptions`); the rest by the hub on every use, so tests
 * may shorten them on a running hub.
 */
export type RealtimeLimits = {
  /** Sent to clients in connection_established: they ping after this much silence from us. */
  activityTimeoutSeconds: number;
  /** A client silent this long gets a pusher:ping ... */
  idleSeconds: number;
  /** ... and is closed with 4201 when it does not answer within this. */
  pongTimeoutSeconds: number;
  /** How often idle and slow clients are looked for. */
  sweepSeconds: number;
  maxSubscriptionsPerConnection: number;
  maxConnections: number;
  /** Open connections of one client address; the next one is closed with 4004. */
  maxConnectionsPerAddress: number;
  /** Largest client frame handled; bigger ones get a pusher:error (the connection stays). */
  maxMessageBytes: number;
  /** Unsent bytes above which a client counts as slow; slow at two sweeps in a row → closed 4100. */
  slowClientBytes: number;
};

/**
 * The process's open-file limit (Linux: /proc/self/limits), or null where it cannot be read. Every
 * connection is a file: WebSockets past it leave none for HTTP requests or the database.
 */
export function openFileLimit(limits = "/proc/self/limits"): number | null {
  try {
    const line = readFileSync(limits, "utf8").match(/^Max open files\s+(\d+|unlimited)/m)?.[1];
    return line === undefined || line === "unlimited" ? null : Number(line);
  } catch {
    return null;
  }
}

/** Files kept for everything but WebSockets: HTTP clients, the database pool, Redis, logs. */
const FILES_KEPT = 2_000;

export const DEFAULT_LIMITS: RealtimeLimits = {
  activityTimeoutSeconds: 120,
  idleSeconds: 120,
  pongTimeoutSeconds: 30,
  sweepSeconds: 5,
  maxSubscriptionsPerConnection: 100,
  maxConnections: Math.max(1_000, Math.min(50_000, (openFileLimit() ?? Number.POSITIVE_INFINITY) - FILES_KEPT)),
  maxConnectionsPerAddress: 1_000,
  maxMessageBytes: 10 * 1024,
  slowClientBytes: 256 * 1024,
};

/** Frames above this close the connection with 1009 (Bun, before our handler sees them). */
export const MAX_PAYLOAD_BYTES = 64 * 1024;
/**
 * Unsent bytes per connection; an event past it closes the connection at once (Bun, before the
 * event is queued). Dropping it instead, and handing the client the events after it once it read
 * a little, left holes before the last event_id it saw, which its catch-up (`?after=`) never filled.
 */
export const BACKPRESSURE_LIMIT_BYTES = 1024 * 1024;

/** Bun's `websocket` server settings; app.ts passes them to Elysia so `app.listen` uses them. */
export const websocketServerOptions = {
  maxPayloadLength: MAX_PAYLOAD_BYTES,
  backpressureLimit: BACKPRESSURE_LIMIT_BYTES,
  closeOnBackpressureLimit: true,
  perMessageDeflate: false,
};
