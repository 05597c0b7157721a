import { createColors } from "picocolors";

/** An error meant for the operator: printed as one line on stderr, exit code 1. */
export class CliError extends Error {}

/** The options every command inherits from the program (see main.ts). */
export type GlobalOptions = { json?: boolean; url?: string; token?: string; org?: string };

const colorsOn = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
export const colors = createColors(colorsOn);

/**
 * Text from the server made safe to print on a terminal: its control characters (C0 but the
 * newline, DEL and C1) shown as `\x1b`-style escapes. An SMS is anyone's text, and ESC or CSI
 * sequences in it would otherwise move the cursor, clear the screen, recolour or fake output,
 * retitle the window or write the clipboard of whoever reads it.
 */
export const printable = (text: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
  text.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/** `printable` on every string of a value: an API answer or a realtime event, before a person's rendering sees it. */
export function printableDeep<T>(value: T): T {
  if (typeof value === "string") return printable(value) as T;
  if (Array.isArray(value)) return value.map(printableDeep) as T;
  if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, printableDeep(v)])) as T;
  return value;
}

export type Column<T> = { header: string; value: (row: T) => unknown; color?: (text: string) => string };

const cell = (v: unknown): string => {
  if (v === null || v === undefined) return "-";
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "object") return JSON.stringify(v);
  return printable(String(v));
};

/** An aligned text table; headers dimmed and bold on a terminal. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  if (rows.length === 0) return colors.dim("(none)");
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const pad = (text: string, i: number) => text.padEnd(widths[i]!);
  const header = columns.map((c, i) => colors.bold(pad(c.header, i))).join("  ");
  const body = cells.map((row) =>
    row
      .map((text, i) => (columns[i]!.color ?? ((s: string) => s))(pad(text, i)))
      .join("  ")
      .trimEnd(),
  );
  return [header.trimEnd(), ...body].join("\n");
}

/** "key  value" lines, keys aligned. */
export function details(pairs: [string, unknown][]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${colors.dim(k.padEnd(width))}  ${cell(v)}`).join("\n");
}

/** Colours a status word: green for the good ones, red for the bad, yellow otherwise. */
export function statusColor(status: string): string {
  if (["ok", "active", "online", "succeeded", "delivered", "sent", "received"].includes(status)) return colors.green(status);
  if (["failing", "down", "revoked", "failed", "inactive", "offline"].includes(status)) return colors.red(status);
  return colors.yellow(status);
}

/** Prints `value` as JSON with --json, else the human rendering. */
export function emit(opts: GlobalOptions, value: unknown, human: () => string): void {
  console.log(opts.json ? JSON.stringify(value, null, 2) : human());
}
