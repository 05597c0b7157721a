/**
 * A SIM's sending policy and the pacing rule it implies (issue 19 item 4, docs/sending.md
 * "Pacing"). Pure: the pacer (pacer.ts) holds the state in PostgreSQL and asks this module
 * when the next message may go and what the state is once it has gone.
 */
export type SendingPolicy = {
  messagesPerMinute: number;
  /** A random pause in this range separates two messages (the longer of it and 60 s / messagesPerMinute wins). */
  minDelayMs: number;
  maxDelayMs: number;
  dailyCap: number;
  /** Minutes of the day in `timeZone` during which nothing is sent; null: no quiet hours. */
  quiet: { start: number; end: number } | null;
  timeZone: string;
};

/** The durable pacing state of one SIM (table sim_pacing). */
export type PacingState = { nextAllowedAt: number | null; day: string | null; dayCount: number };

/**
 * The defaults, chosen to keep a consumer SIM well below what carriers and Android flag
 * (docs/sending.md "Why these defaults"): 6 a minute with 8 to 20 s between messages looks like
 * a quick human, and 200 a day stays under the daily volumes consumer plans' fair-use rules and
 * carrier spam filters start to act on. No quiet hours: the recipients' time zone is not known.
 */
export const DEFAULT_POLICY: SendingPolicy = {
  messagesPerMinute: 6,
  minDelayMs: 8_000,
  maxDelayMs: 20_000,
  dailyCap: 200,
  quiet: null,
  timeZone: "UTC",
};

export const LIMITS = { messagesPerMinute: 600, delaySeconds: 3600, dailyCap: 100_000 } as const;

const formats = new Map<string, Intl.DateTimeFormat>();
function formatOf(timeZone: string) {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formats.set(timeZone, f);
  }
  return f;
}

/**
 * The runtime's own spelling of a time zone name it knows (IANA, e.g. "Europe/Berlin", or "UTC",
 * in any letter case), or null. Policies store this spelling, so the formats cached by zone hold
 * one per zone, not one per way of writing it (every spelling made a format of its own: 29 KiB,
 * kept for good, and a long name has a billion spellings).
 */
export function canonicalTimeZone(name: string): string | null {
  try {
    return new Intl.DateTimeFormat("en", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

const MINUTE_MS = 60_000;

/** The local calendar day (YYYY-MM-DD) and the milliseconds since local midnight at `ms` in `timeZone`, formatted afresh. */
export function formatLocalTime(ms: number, timeZone: string): { day: string; msOfDay: number } {
  const parts = Object.fromEntries(
    formatOf(timeZone)
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  const msOfDay = ((Number(parts.hour) * 60 + Number(parts.minute)) * 60 + Number(parts.second)) * 1000 + (ms % 1000);
  return { day: `${parts.year}-${parts.month}-${parts.day}`, msOfDay };
}

/**
 * Each time zone's last UTC minute asked about: its local day and the milliseconds since local
 * midnight at the minute's start. The pacer asks about the same minute for every send of a batch,
 * and formatting is the costly part (a tenth of the server's JavaScript samples in the dispatch
 * of scheduled sends, docs/benchmarks.md). Kept only for a minute whose local seconds are its UTC
 * seconds (an offset of whole minutes, as every zone's since the 1970s), and zones change their
 * offset at whole minutes: every instant of such a minute is then its start plus the time since,
 * on the same local day. One entry per time zone in use.
 */
const lastMinute = new Map<string, { minute: number; day: string; msOfDay: number }>();

/** formatLocalTime, reusing the zone's last minute (above). */
export function localTime(ms: number, timeZone: string): { day: string; msOfDay: number } {
  const minute = Math.floor(ms / MINUTE_MS);
  const sinceMinute = ms - minute * MINUTE_MS;
  const known = lastMinute.get(timeZone);
  if (known?.minute === minute) return { day: known.day, msOfDay: known.msOfDay + sinceMinute };
  const local = formatLocalTime(ms, timeZone);
  if (local.msOfDay % MINUTE_MS === sinceMinute) lastMinute.set(timeZone, { minute, day: local.day, msOfDay: local.msOfDay - sinceMinute });
  return local;
}

const DAY_MS = 86_400_000;
const inQuiet = (q: { start: number; end: number }, minute: number) =>
  q.start <= q.end ? minute >= q.start && minute < q.end : minute >= q.start || minute < q.end;

/**
 * When the next message may go out, at `now` or later: after next_allowed_at, outside quiet
 * hours, and on a local day under the cap. A jump to the window's end (or to midnight) is made in
 * wall-clock minutes; across a daylight-saving change it lands an hour off: early (a longer day),
 * and the next round of the loop goes on from there, or late (a shorter day, a skipped hour),
 * and `backTo` moves it back to the local minute aimed at.
 */
export function nextSlot(p: SendingPolicy, s: PacingState, now: number): number {
  let at = Math.max(now, s.nextAllowedAt ?? now);
  for (let i = 0; i < 4; i++) {
    const local = localTime(at, p.timeZone);
    const minute = Math.floor(local.msOfDay / 60_000);
    if (p.quiet && inQuiet(p.quiet, minute)) {
      at = backTo(at + ((p.quiet.end - minute + 1440) % 1440) * 60_000 - (local.msOfDay % 60_000), p.quiet.end, p.timeZone);
      continue;
    }
    if (local.day === s.day && s.dayCount >= p.dailyCap) {
      at = backTo(at + DAY_MS - local.msOfDay, 0, p.timeZone);
      continue;
    }
    return at;
  }
  return at;
}

/**
 * `at`, a jump's landing at a minute boundary, moved back to the first instant at or past the
 * local minute `target` when a daylight-saving change made it land later (by up to two hours):
 * the target itself, or, when it fell in the skipped hour, that hour's end. Minute by minute, and
 * only on the day of a change (elsewhere the landing is the target at once).
 */
function backTo(at: number, target: number, timeZone: string): number {
  const past = (ms: number) => (Math.floor(localTime(ms, timeZone).msOfDay / 60_000) - target + 1440) % 1440;
  let t = at;
  for (let over = past(t); over > 0 && over <= 120 && past(t - 60_000) <= 120; over--) t -= 60_000;
  return t;
}

/** The state once a message went out at `at`: the next may go after the policy's gap, the day's count is one more. */
export function afterSend(p: SendingPolicy, s: PacingState, at: number, random: () => number = Math.random): PacingState {
  const day = localTime(at, p.timeZone).day;
  const pause = p.minDelayMs + Math.floor(random() * (p.maxDelayMs - p.minDelayMs + 1));
  const gap = Math.max(Math.ceil(60_000 / p.messagesPerMinute), pause);
  return { nextAllowedAt: at + gap, day, dayCount: day === s.day ? s.dayCount + 1 : 1 };
}

/** The messages a SIM has sent on its current local day at `now` (0 when its count is of another day). */
export function sentToday(p: SendingPolicy, s: PacingState, now: number): number {
  return s.day === localTime(now, p.timeZone).day ? s.dayCount : 0;
}
