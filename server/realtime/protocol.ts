import { createHmac, randomInt } from "node:crypto";
import { constantTimeEqual } from "../lib/crypto";

/**
 * Pusher Channels protocol 7 as the server speaks it: frames, close codes, signatures.
 * Close-code ranges tell clients what to do: 4000-4099 do not reconnect, 4100-4199 reconnect
 * after a pause, 4200-4299 reconnect at once.
 */
export const PROTOCOL_VERSION = 7;
export const SUPPORTED_PROTOCOLS = new Set([5, 6, 7]);

export const CloseCode = {
  unknownAppKey: 4001,
  overQuota: 4004,
  badProtocolVersion: 4006,
  unsupportedProtocol: 4007,
  noProtocol: 4008,
  /** A credential that authorized one of the connection's subscriptions was revoked. */
  unauthorized: 4009,
  overCapacity: 4100,
  reconnectNow: 4200,
  pongNotReceived: 4201,
} as const;

/** Codes carried in `pusher:error` frames that do not close the connection. */
export const ErrorCode = {
  clientEventRejected: 4301,
  messageTooLarge: 4302,
} as const;

/** `socket_id` as Pusher forms it; the auth endpoint accepts nothing else. */
export const SOCKET_ID_PATTERN = "^\\d{1,20}\\.\\d{1,20}$";
const socketIdRe = new RegExp(SOCKET_ID_PATTERN);

export const newSocketId = () => `${randomInt(1, 2 ** 47)}.${randomInt(1, 2 ** 47)}`;
export const isSocketId = (s: unknown): s is string => typeof s === "string" && socketIdRe.test(s);

/** Server → client frame. Event data travels as a JSON string, as Pusher sends it. */
export function eventFrame(event: string, data: unknown, channel?: string): string {
  const frame: Record<string, unknown> = { event, data: typeof data === "string" ? data : JSON.stringify(data) };
  if (channel !== undefined) frame.channel = channel;
  return JSON.stringify(frame);
}

/** `pusher:error`: its data is an object in the protocol, not a string. */
export function errorFrame(message: string, code: number | null): string {
  return JSON.stringify({ event: "pusher:error", data: { message, code } });
}

export function subscriptionErrorFrame(channel: string, status: number, error: string, type = "AuthError"): string {
  return eventFrame("pusher:subscription_error", { type, error, status }, channel);
}

export type ClientFrame = { event: string; data: unknown; channel?: string };

/** A client frame, or the reason it is not one. */
export function parseClientFrame(raw: string): ClientFrame | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { error: "Malformed message: not JSON." };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { error: "Malformed message: expected a JSON object." };
  const frame = value as Record<string, unknown>;
  if (typeof frame.event !== "string" || frame.event === "") return { error: "Malformed message: missing event name." };
  let data = frame.data;
  // Some clients send data as a JSON string, as the server does.
  if (typeof data === "string") {
    try {
      data = JSON.parse(data);
    } catch {
      // a plain string payload stays as it is
    }
  }
  return { event: frame.event, data, channel: typeof frame.channel === "string" ? frame.channel : undefined };
}

/** The `auth` value of API.md: `<key>:<hex HMAC-SHA256(secret, socket_id:channel_name)>`. */
export function signChannel(key: string, secret: string, socketId: string, channel: string): string {
  return `${key}:${createHmac("sha256", secret).update(`${socketId}:${channel}`).digest("hex")}`;
}

export function verifyChannelSignature(key: string, secret: string, socketId: string, channel: string, auth: unknown): boolean {
  if (typeof auth !== "string") return false;
  return constantTimeEqual(auth, signChannel(key, secret, socketId, channel));
}
