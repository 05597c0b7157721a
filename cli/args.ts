import { type Command, InvalidArgumentError } from "commander";
import type { GlobalOptions } from "./output";

/** Argument parsers for commander: a bad value is a usage error (exit 2). */
export function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) throw new InvalidArgumentError("Not a positive integer.");
  return Number(value);
}

export const E164 = /^\+[1-9]\d{6,14}$/;

export function e164(value: string): string {
  if (!E164.test(value)) throw new InvalidArgumentError("Not an E.164 phone number (like +15551234567).");
  return value;
}

export function email(value: string): string {
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) || value.length > 254) throw new InvalidArgumentError("Not an email address.");
  return value;
}

/** For variadic arguments: parses each value and collects them. */
export const each =
  <T>(parse: (v: string) => T) =>
  (value: string, previous: T[] | undefined): T[] => [...(previous ?? []), parse(value)];

/** The program-wide options (--json, --url, --token, --org) merged with the command's own. */
export const globals = <T extends object = object>(cmd: Command) => cmd.optsWithGlobals() as GlobalOptions & T;

/** `--org`: the organization a server command acts in (X-Organization-Id); per command, since `admin user create --org` means another thing. */
export const orgOption = (cmd: Command) => cmd.option("--org <org-id>", "organization to act in (X-Organization-Id; default: your first)");

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** An ISO 8601 date-time as a Date (invalid when it is none): it must start with the date itself. */
const isoDate = (value: string) => (/^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : new Date(Number.NaN));

/** A point in time: an ISO 8601 date-time, or an age such as `90s`, `15m`, `2h`, `7d` (that long ago). */
export function instant(value: string): string {
  return instantAt(value, Date.now());
}

/** instant, an age counted back from `now` (one clock reading for several options). */
export function instantAt(value: string, now: number): string {
  const age = value.match(/^(\d+)([smhdw])$/);
  if (age) return new Date(now - Number(age[1]) * UNIT_SECONDS[age[2]!]! * 1000).toISOString();
  const date = isoDate(value);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError("Not a date-time (2026-11-21T10:00:00Z) or an age (15m, 2h, 7d).");
  return date.toISOString();
}

/** A time ahead: an ISO 8601 date-time, or a delay from now such as `10m`, `2h`, `1d`. */
export function ahead(value: string): string {
  const delay = value.match(/^(\d+)([smhdw])$/);
  // A delay past what a date can hold (99999999999w) is no time either.
  const date = delay ? new Date(Date.now() + durationMs(value)) : isoDate(value);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError("Not a date-time (2026-11-21T10:00:00Z) or a delay (10m, 2h, 1d).");
  return date.toISOString();
}

/** A length of time: `90s`, `30m`, `2h`, `1d`, `1w`, in milliseconds. */
export function durationMs(value: string): number {
  const m = value.match(/^(\d+)([smhdw])$/);
  if (!m || Number(m[1]) < 1) throw new InvalidArgumentError("Not a duration (90s, 30m, 2h, 1d).");
  return Number(m[1]) * UNIT_SECONDS[m[2]!]! * 1000;
}

/** A hosted SIM given by id or by its E.164 number. */
export function numberRef(value: string): number | string {
  if (/^\d+$/.test(value)) return positiveInt(value);
  return e164(value);
}
