import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { ApiBody } from "../clients/api";

/** An SMS the phone received, as it will be submitted (POST /api/byos/devices/{device}/sms); the phone always knows when. */
export type ReceivedSms = ApiBody<"/api/byos/devices/{device}/sms", "post"> & { received_at: string };

export type OutboxEntry = { device: string; sms: ReceivedSms; queued_at: string };

type Line = { t: "sms"; device: string; sms: ReceivedSms; queued_at: string } | { t: "ack"; message_id: string };

/**
 * The device's local outbox. An SMS is written here before anything is sent and removed
 * only when the server acknowledged it, so a crash or a dead server loses nothing. With a
 * path it is an append-only JSON-lines file (one line per SMS, one per ack), compacted on
 * open; without one it lives in memory (fleet runs that do not need to survive a restart).
 */
export type Outbox = {
  add(device: string, sms: ReceivedSms): void;
  ack(messageId: string): void;
  /** Unacknowledged SMS, oldest first; of one device when named. */
  pending(device?: string): OutboxEntry[];
  size(): number;
};

export function openOutbox(path?: string): Outbox {
  const entries = new Map<string, OutboxEntry>();
  // Per-device index: a fleet's devices each look at their own queue many times a second.
  const byDevice = new Map<string, Map<string, OutboxEntry>>();
  const index = (e: OutboxEntry) => {
    let m = byDevice.get(e.device);
    if (!m) byDevice.set(e.device, (m = new Map()));
    m.set(e.sms.message_id, e);
  };
  if (path) {
    mkdirSync(dirname(path), { recursive: true });
    if (existsSync(path)) loadLines(readFileSync(path, "utf8"), entries);
    // Rewrite with only what is pending so the file does not grow across runs.
    const tmp = `${path}.tmp`;
    writeFileSync(tmp, [...entries.values()].map((e) => `${JSON.stringify(toLine(e))}\n`).join(""));
    renameSync(tmp, path);
    entries.forEach(index);
  }
  const write = (line: Line) => {
    if (path) appendFileSync(path, `${JSON.stringify(line)}\n`);
  };
  return {
    add(device, sms) {
      if (entries.has(sms.message_id)) return;
      const entry = { device, sms, queued_at: new Date().toISOString() };
      write(toLine(entry));
      entries.set(sms.message_id, entry);
      index(entry);
    },
    ack(messageId) {
      const entry = entries.get(messageId);
      if (!entry) return;
      entries.delete(messageId);
      byDevice.get(entry.device)?.delete(messageId);
      write({ t: "ack", message_id: messageId });
    },
    pending: (device) => [...(device === undefined ? entries : (byDevice.get(device) ?? new Map<string, OutboxEntry>())).values()],
    size: () => entries.size,
  };
}

const toLine = (e: OutboxEntry): Line => ({ t: "sms", device: e.device, sms: e.sms, queued_at: e.queued_at });

/** Replays the log; a torn last line (crash mid-write) is skipped, not fatal. */
function loadLines(text: string, into: Map<string, OutboxEntry>) {
  for (const raw of text.split("\n")) {
    if (!raw.trim()) continue;
    let line: Line;
    try {
      line = JSON.parse(raw);
    } catch {
      continue;
    }
    if (line.t === "sms") into.set(line.sms.message_id, { device: line.device, sms: line.sms, queued_at: line.queued_at });
    else if (line.t === "ack") into.delete(line.message_id);
  }
}
