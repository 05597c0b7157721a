import { accessSync, constants, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { type ApiAnswer, type ApiErrorBody, type ApiQuery, asLoggedEvent } from "../../clients/api";
import { type ApiClient, createApiClient } from "../api-client";
import { globals, numberRef, orgOption, positiveInt } from "../args";
import { CliError, colors, emit, printable, table } from "../output";
import { untilStopped } from "../realtime";
import { resolveNumberId } from "./numbers";

type EventPage = ApiAnswer<"/api/events", "get">;
type Event = EventPage["data"][number];
type EventQuery = ApiQuery<"/api/events", "get">;

type FilterOptions = { type?: string[]; number?: number | string; device?: number };

/** `--type` may be repeated and may hold several types separated by commas. */
const collectTypes = (value: string, previous: string[] | undefined) => [...(previous ?? []), ...value.split(",").filter(Boolean)];

function perPage(value: string): number {
  const n = positiveInt(value);
  if (n > 500) throw new InvalidArgumentError("at most 500");
  return n;
}

function waitSeconds(value: string): number {
  const n = positiveInt(value);
  if (n > 60) throw new InvalidArgumentError("at most 60 seconds");
  return n;
}

const compact = (value: unknown, max = 100) => {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

/** One line saying what happened, from the event's payload (its type decides the shape: docs/events.md). */
function summary(listed: Event): string {
  const { data } = asLoggedEvent(listed);
  if ("message" in data && typeof data.message === "object") {
    const m = data.message;
    if (!("to" in m)) return `message ${m.id}`;
    const from = "from" in m ? m.from : m.number;
    return `${from} → ${m.to}  ${"status" in m ? m.status : ""}  ${compact(m.text, 60)}`;
  }
  if ("device_id" in data) {
    const card = "sim_card" in data ? (data.sim_card as { phone_number?: string | null; sim_slot?: number | null }) : null;
    if (card) return `device ${data.device_id} SIM slot ${card.sim_slot ?? "-"} ${card.phone_number ?? ""}${"reason" in data ? ` (${data.reason})` : ""}`;
    if ("config_version" in data && !("status" in data)) return `device ${data.device_id} config version ${data.config_version}`;
    return `device ${data.device_id}${"status" in data ? ` ${data.status}` : ""}`;
  }
  // Number events: the number, whether it is locked now, and until when or why not.
  if ("number" in data && "locked" in data) {
    const lock = data.lock as { locked_until?: string } | null;
    if (data.locked) return `${data.number} locked${lock?.locked_until ? ` until ${lock.locked_until}` : ""}`;
    return `${data.number} unlocked${"reason" in data ? ` (${data.reason})` : ""}`;
  }
  return compact(data);
}

const columns = [
  { header: "AT", value: (e: Event) => e.created_at },
  { header: "TYPE", value: (e: Event) => e.type },
  { header: "ORG", value: (e: Event) => e.organization_id },
  { header: "WHAT", value: summary },
  { header: "ID", value: (e: Event) => e.id },
];

async function filterQuery(api: ApiClient, o: FilterOptions): Promise<EventQuery> {
  return {
    types: o.type?.length ? o.type.join(",") : undefined,
    hosted_sim: o.number === undefined ? undefined : await resolveNumberId(api, o.number),
    device: o.device,
  };
}

const withFilters = (cmd: Command) =>
  orgOption(cmd)
    .option("--type <type>", "only events of this type (repeat, or separate with commas)", collectTypes)
    .option("--number <number>", "only events of this number (hosted SIM id or E.164)", numberRef)
    .option("--device <id>", "only events of this device", positiveInt);

/** The cursor a tail resumes from: --after, else the cursor file, else from now on. */
function startCursor(after: string | undefined, file: string | undefined): string {
  // Before anything is followed: a folder the cursor cannot be written to failed at the first event.
  if (file) {
    const folder = dirname(resolve(file));
    try {
      accessSync(folder, constants.W_OK);
    } catch {
      throw new CliError(`--cursor-file: cannot write in ${folder} (it does not exist, or is not writable).`);
    }
  }
  if (after) return after;
  if (file && existsSync(file)) {
    const saved = readFileSync(file, "utf8").trim();
    if (saved) return saved;
  }
  return "now";
}

/** Written whole or not at all: a tail killed mid-write still resumes from a cursor it had. */
function saveCursor(file: string, cursor: string) {
  writeFileSync(`${file}.tmp`, `${cursor}\n`);
  renameSync(`${file}.tmp`, file);
}

const RETRYABLE = new Set([429, 500, 502, 503, 504]);

type TailOptions = FilterOptions & { after?: string; cursorFile?: string; count?: number; wait: number };

/**
 * Follows the log by long-polling: each call waits up to `wait` seconds and answers the events
 * after the cursor, which then moves to `meta.next_cursor`. A server that is restarting (no
 * connection, 503, 429) is retried with a growing pause; the cursor is kept, so nothing is
 * missed and nothing printed twice.
 */
async function tail(api: ApiClient, o: TailOptions, print: (e: Event) => void): Promise<void> {
  const filters = await filterQuery(api, o);
  const stop = untilStopped();
  let cursor = startCursor(o.after, o.cursorFile);
  let printed = 0;
  let pause = 500;
  let stopped = false;
  void stop.stopped.then(() => (stopped = true));
  process.stderr.write(`Following events${cursor === "now" ? " from now on" : ` after ${cursor}`}; Ctrl-C to stop.\n`);
  while (!stopped) {
    const outcome = await Promise.race([
      // "From now on" is answered at once the first time: the position it names is saved before
      // any wait, so a tail stopped during its first wait resumes there instead of at a later "now".
      api
        .GET("/api/events", { params: { query: { ...filters, after: cursor, wait: cursor === "now" ? undefined : o.wait, per_page: 500 } } })
        .catch((e: Error) => ({ failed: e.message })),
      stop.stopped.then(() => null),
    ]);
    if (outcome === null) break;
    if ("failed" in outcome || RETRYABLE.has(outcome.response.status)) {
      const why = "failed" in outcome ? outcome.failed : `HTTP ${outcome.response.status}`;
      const retryAfter = "failed" in outcome ? 0 : Number(outcome.response.headers.get("retry-after") ?? 0) * 1000;
      const delay = Math.max(pause, retryAfter);
      process.stderr.write(colors.dim(`${why}; retrying in ${(delay / 1000).toFixed(1)} s\n`));
      await Promise.race([Bun.sleep(delay), stop.stopped]);
      pause = Math.min(pause * 2, 15_000);
      continue;
    }
    if (outcome.response.status === 410)
      throw new CliError(
        `The events after ${cursor} are gone: the server keeps events for EVENT_RETENTION_DAYS days. Start again without --after${o.cursorFile ? ` and without the cursor in ${o.cursorFile}` : ""} (from the oldest event kept), or with --after now.`,
      );
    if (!outcome.response.ok) throw new CliError(printable((outcome.error as Partial<ApiErrorBody> | undefined)?.message ?? `HTTP ${outcome.response.status}`));
    pause = 500;
    const page = api.forPrinting(outcome.data!);
    for (const e of page.data) {
      print(e);
      cursor = e.id;
      if (o.cursorFile) saveCursor(o.cursorFile, cursor); // printed, so never printed again after a restart
      if (o.count && ++printed >= o.count) {
        stopped = true;
        break;
      }
    }
    if (!stopped && page.data.length === 0 && cursor !== page.meta.next_cursor) {
      cursor = page.meta.next_cursor; // `now` becomes a position
      if (o.cursorFile) saveCursor(o.cursorFile, cursor);
    }
  }
}

export function registerEvents(program: Command): void {
  const events = program.command("events").description("the event log: what happened to your messages, numbers and devices");

  withFilters(events.command("list"))
    .description("events after a cursor, oldest first (without --after: from the oldest kept)")
    .option("--after <cursor>", "list the events after this event id or cursor (`now`: none yet)")
    .option("--limit <n>", "events per call (1 to 500, default 100)", perPage)
    .option("--all", "follow the cursor until caught up (every event after --after)")
    .action(async (_opts, cmd: Command) => {
      const o = globals<FilterOptions & { after?: string; limit?: number; all?: boolean }>(cmd);
      const api = createApiClient(o);
      const query = { ...(await filterQuery(api, o)), after: o.after, per_page: o.limit };
      const body = await api.ok(api.GET("/api/events", { params: { query } }));
      while (o.all && body.meta.has_more) {
        const next = await api.ok(api.GET("/api/events", { params: { query: { ...query, after: body.meta.next_cursor } } }));
        body.data.push(...next.data);
        body.meta = next.meta;
      }
      emit(o, body, () => `${table(body.data, columns)}\n${colors.dim(`next: --after ${body.meta.next_cursor}${body.meta.has_more ? " (more follow)" : ""}`)}`);
    });

  withFilters(events.command("tail"))
    .description("follow new events as they happen (long-polling; --json: one JSON object per line); resumes from its cursor when the server restarts")
    .option("--after <cursor>", "start after this event id or cursor (default: the cursor file's, else from now on)")
    .option("--cursor-file <path>", "keep the cursor in this file, so a restarted tail resumes where it stopped")
    .option("--count <n>", "stop after this many events", positiveInt)
    .option("--wait <seconds>", "how long each call waits on the server (1 to 60)", waitSeconds, 30)
    .action(async (_opts, cmd: Command) => {
      const o = globals<TailOptions>(cmd);
      const api = createApiClient(o);
      await tail(api, o, (e) =>
        console.log(o.json ? JSON.stringify(e) : [colors.dim(e.created_at), e.type.padEnd(18), summary(e), colors.dim(e.id)].join("  ")),
      );
    });
}
