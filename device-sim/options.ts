import { InvalidArgumentError } from "commander";
import type { Credentials } from "./api";
import { E164 } from "./provider";
import { parseDuration } from "./scenario";

/** Option parsers for commander: a bad value throws InvalidArgumentError, a usage error (exit 2). */

export const num =
  (name: string, min = 0) =>
  (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new InvalidArgumentError(`${name} must be a number ≥ ${min}`);
    return n;
  };

/** A factor that multiplies waits: 0 would make every wait nothing (a heartbeat loop with no pause). */
export const factor = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a number > 0`);
  return n;
};

export const share = (name: string) => (v: string) => {
  const n = num(name)(v);
  if (n > 1) throw new InvalidArgumentError(`${name} must be a share between 0 and 1`);
  return n;
};

export const duration = (v: string) => {
  try {
    return parseDuration(/^\d+(\.\d+)?$/.test(v) ? Number(v) : v);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
};

export const account = (v: string, prev: Credentials[] = []) => {
  const [email, password, totpSecret] = v.split(":");
  if (!email || !password) throw new InvalidArgumentError("use email:password or email:password:totp-secret");
  return [...prev, { email, password, totpSecret }];
};

/** A phone has SIM slots 1 and 2 (the server's registration takes no others). */
export const slots = (v: string) => {
  const list = v.split(",").map((s) => s.trim());
  if (!list.every((s) => s === "1" || s === "2")) throw new InvalidArgumentError("slots must be 1, 2 or 1,2");
  if (new Set(list).size !== list.length) throw new InvalidArgumentError("a slot may be listed once");
  return list.map(Number);
};

export const numbers = (v: string) => {
  const list = v.split(",").map((s) => s.trim());
  const bad = list.find((n) => !E164.test(n));
  if (bad !== undefined) throw new InvalidArgumentError(`"${bad}" is not an E.164 number (like +15551234567)`);
  if (new Set(list).size !== list.length) throw new InvalidArgumentError("a number may be listed once");
  return list;
};
