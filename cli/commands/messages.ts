import { readFileSync } from "node:fs";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { ApiAnswer } from "../../clients/api";
import { createApiClient } from "../api-client";
import { ahead, durationMs, E164, e164, each, globals, instant, numberRef, orgOption, positiveInt } from "../args";
import { parseCsv } from "../csv";
import { CliError, colors, emit, statusColor, table } from "../output";
import { subscribe, untilStopped } from "../realtime";
import { resolveNumberId } from "./numbers";

type Message = ApiAnswer<"/api/messages/{id}", "get">["data"];

const oneLine = (text: string, max = 60) => {
  const flat = text.replace(/\s+/g, " ");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

const columns = [
  { header: "ID", value: (m: Message) => m.id },
  { header: "AT", value: (m: Message) => m.received_at ?? m.sent_at ?? m.created_at },
  { header: "DIR", value: (m: Message) => (m.direction === "inbound" ? "in" : "out") },
  { header: "FROM", value: (m: Message) => m.from },
  { header: "TO", value: (m: Message) => m.to },
  { header: "STATUS", value: (m: Message) => m.status, color: (s: string) => statusColor(s.trim()) + s.slice(s.trimEnd().length) },
  { header: "TEXT", value: (m: Message) => oneLine(m.text) },
];

const tailLine = (event: string, m: Message) =>
  [
    colors.dim(m.received_at ?? m.sent_at ?? m.created_at),
    m.direction === "inbound" ? "in " : "out",
    `${m.from} → ${m.to}`,
    statusColor(m.status),
    event === "message.received" ? oneLine(m.text, 120) : colors.dim(oneLine(m.text, 60)),
    ...(m.error ? [colors.dim(`(${m.error})`)] : []),
  ].join("  ");

type SendOptions = {
  number: number | string;
  to?: string[];
  toFile?: string;
  text: string;
  sendAt?: string;
  at?: string;
  expiresAt?: string;
  expiresIn?: number;
  idempotencyKey?: string;
};

/** --at is --send-at; --expires-in counts from when the message is due (send_at, else now: a past send_at sends now). One of each pair. */
function timesOf(o: SendOptions): { send_at?: string; expires_at?: string } {
  if (o.at && o.sendAt) throw new CliError("Give --at or --send-at, not both.");
  if (o.expiresIn && o.expiresAt) throw new CliError("Give --expires-in or --expires-at, not both.");
  const sendAt = o.at ?? o.sendAt;
  const due = Math.max(sendAt ? Date.parse(sendAt) : 0, Date.now());
  return { send_at: sendAt, expires_at: o.expiresIn ? new Date(due + o.expiresIn).toISOString() : o.expiresAt };
}

type Recipient = string | { to: string; vars: Record<string, string> };

/** One --to: a single send as before; several, or a file: a bulk send (an array). */
function recipientsOf(o: SendOptions): string | Recipient[] {
  const listed: Recipient[] = [...(o.to ?? [])];
  if (o.toFile) listed.push(...readRecipients(o.toFile));
  if (listed.length === 0) throw new CliError("Give a recipient: --to <phone> (repeatable) or --to-file <csv>.");
  return listed.length === 1 && !o.toFile ? (listed[0] as string) : listed;
}

function readRecipients(path: string): Recipient[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new CliError(`Cannot read ${path}: ${(e as Error).message}`);
  }
  const [header, ...rows] = parseCsv(text);
  const names = (header ?? []).map((h) => h.trim());
  const at = names.indexOf("to");
  if (at === -1) throw new CliError(`${path}: the first line must name the columns, one of them \`to\`.`);
  return rows.map((row, i) => {
    const to = (row[at] ?? "").trim();
    if (!E164.test(to)) throw new CliError(`${path}, line ${i + 2}: "${to}" is not an E.164 phone number.`);
    // A short row would fill its missing columns with nothing, sending "Hi " for "Hi {{name}}".
    if (row.length < names.length)
      throw new CliError(`${path}, line ${i + 2}: ${row.length} value${row.length === 1 ? "" : "s"} for the ${names.length} columns of the first line.`);
    const vars = Object.fromEntries(names.map((name, j) => [name, row[j]!]).filter(([name], j) => j !== at && name !== ""));
    return Object.keys(vars).length > 0 ? { to, vars } : to;
  });
}

function describeMessage(m: Message): string {
  const lines = [`Message ${m.id} (${m.direction}) ${m.from} → ${m.to}`, `status    ${statusColor(m.status)} since ${m.status_updated_at}`];
  if (m.direction === "outbound") {
    lines.push(`attempts  ${m.attempts}`);
    if (m.send_at) lines.push(`send at   ${m.send_at}`);
    if (m.expires_at) lines.push(`expires   ${m.expires_at}`);
    if (m.sent_at) lines.push(`sent at   ${m.sent_at}`);
    // The provider's id of the message: what its support asks for.
    if (m.external_id) lines.push(`provider  ${m.external_id}`);
    if (m.batch_id) lines.push(`batch     ${m.batch_id}`);
  }
  if (m.error) lines.push(`error     ${m.error}`);
  lines.push(`text      ${oneLine(m.text, 200)}`);
  return lines.join("\n");
}

type WaitOptions = { number: number | string; from?: string; contains?: string; code?: boolean; after?: string; timeout: number };

/** The API waits 1 to 120 s per call. */
function waitSeconds(value: string): number {
  const n = positiveInt(value);
  if (n > 120) throw new InvalidArgumentError("at most 120 seconds");
  return n;
}

type ListOptions = {
  number?: number | string;
  batch?: string;
  since?: string;
  until?: string;
  direction?: "inbound" | "outbound";
  search?: string;
  limit?: number;
  page?: number;
};

export function registerMessages(program: Command): void {
  const messages = program.command("messages").description("message history and sending");

  orgOption(messages.command("list"))
    .description("messages of a number, newest first; or of a bulk send (--batch), in recipient order")
    .option("--number <number>", "hosted SIM id or E.164 number", numberRef)
    .option("--batch <id>", "the batch id of a bulk send, instead of --number")
    .option("--since <time>", "from this date-time, or this long ago (15m, 2h, 7d)", instant)
    .option("--until <time>", "before this date-time, or this long ago", instant)
    .addOption(new Option("--direction <direction>", "only inbound or outbound").choices(["inbound", "outbound"]))
    .option("--search <text>", "text contains (case-insensitive)")
    .option("--limit <n>", "messages per page (1 to 100, default 50)", positiveInt)
    .option("--page <n>", "page (default 1)", positiveInt)
    .action(async (_opts, cmd: Command) => {
      const o = globals<ListOptions>(cmd);
      if ((o.number === undefined) === (o.batch === undefined)) cmd.error("error: give --number or --batch (one of them)", { exitCode: 2 });
      const api = createApiClient(o);
      const hostedSim = o.number === undefined ? undefined : await resolveNumberId(api, o.number);
      const query = {
        hosted_sim: hostedSim,
        batch: o.batch,
        since: o.since,
        until: o.until,
        direction: o.direction,
        q: o.search,
        per_page: o.limit,
        page: o.page,
      };
      const body = await api.ok(api.GET("/api/messages", { params: { query } }));
      emit(o, body, () => {
        const { meta } = body;
        const footer = meta && Number(meta.last_page) > 1 ? `\npage ${meta.current_page} of ${meta.last_page} (${meta.total} messages); --page for more` : "";
        return table(body.data, columns) + footer;
      });
    });

  orgOption(messages.command("send"))
    .description(
      "send an SMS from one of your numbers (counted against the plan); several --to, or --to-file, make one bulk send (all accepted or none), with {{name}} in --text filled per recipient from the file's columns",
    )
    .requiredOption("--number <number>", "hosted SIM id or E.164 number to send from", numberRef)
    .option("--to <phone>", "recipient, E.164; repeat for a bulk send", each(e164))
    .option("--to-file <csv>", "recipients from a CSV file with a header line: a `to` column, and a column per {{variable}} of the text")
    .requiredOption("--text <text>", "message text (1 to 1600 characters)")
    .option("--at <time>", "send later: an ISO 8601 date-time, or a delay (10m, 2h, 1d) from now; at most 30 days ahead", ahead)
    .option("--send-at <time>", "the same as --at", ahead)
    .option("--expires-in <duration>", "give up unsent this long after it is due (--at, else now): 30m, 2h, 1d", durationMs)
    .option("--expires-at <time>", "give up unsent after this: an ISO 8601 date-time, or a delay (30m, 2h) from now", ahead)
    .option(
      "--idempotency-key <key>",
      "send the Idempotency-Key header: a retry with the same key and body sends nothing twice (times as date-times: a delay such as --at 2h is counted anew on each run, which makes another body)",
    )
    .action(async (_opts, cmd: Command) => {
      const o = globals<SendOptions>(cmd);
      let to: ReturnType<typeof recipientsOf>;
      let times: ReturnType<typeof timesOf>;
      try {
        to = recipientsOf(o);
        times = timesOf(o);
      } catch (e) {
        cmd.error(`error: ${(e as Error).message}`, { exitCode: 2 });
      }
      const api = createApiClient(o);
      const hostedSim = await resolveNumberId(api, o.number);
      const headers = o.idempotencyKey ? { "idempotency-key": o.idempotencyKey } : undefined;
      const request = { hosted_sim: hostedSim, to, text: o.text, ...times };
      const body = await api.ok(api.POST("/api/messages", { body: request, headers }));
      const data = body.data;
      emit(o, body, () => {
        if ("messages" in data) {
          const counts = Object.entries(Object.groupBy(data.messages, (m) => m.status)).map(([status, list]) => `${list!.length} ${status}`);
          return `Batch ${data.batch_id}: ${data.messages.length} messages (${counts.join(", ")}).\n${table(data.messages, columns)}`;
        }
        return `Message ${data.id} to ${data.to} is ${data.status}${data.send_at ? ` (sends at ${data.send_at})` : ""}.`;
      });
    });

  orgOption(messages.command("cancel"))
    .description("cancel a send that has not gone out yet (scheduled, or queued and not handed to the phone or the provider)")
    .argument("<id>", "message id", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.POST("/api/messages/{id}/cancel", { params: { path: { id } } }));
      emit(o, body, () => `Message ${body.data.id} to ${body.data.to} is ${body.data.status}.`);
    });

  orgOption(messages.command("show"))
    .description("one message: for a send, its status, when that last changed, how many times it was handed over, and why it failed")
    .argument("<id>", "message id", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.GET("/api/messages/{id}", { params: { path: { id } } }));
      emit(o, body, () => describeMessage(body.data));
    });

  orgOption(messages.command("wait"))
    .description(
      "wait for the next message on a number and print its text (--code: only its one-time code; --json: the whole message); exit 1 when none arrives in time",
    )
    .requiredOption("--number <number>", "hosted SIM id or E.164 number", numberRef)
    .option("--from <phone>", "only from this sender (letter case ignored)")
    .option("--contains <text>", "only messages whose text contains this (case-insensitive)")
    .option("--code", "only messages carrying a one-time code; print the code alone")
    .option("--after <id-or-time>", "messages after this message id or ISO date-time (default: from now on)")
    .option("--timeout <seconds>", "give up after this many seconds (1 to 120)", waitSeconds, 60)
    .action(async (_opts, cmd: Command) => {
      const o = globals<WaitOptions>(cmd);
      const api = createApiClient(o);
      const id = await resolveNumberId(api, o.number);
      const query = { from: o.from, contains: o.contains, after: o.after, has_code: o.code ? ("true" as const) : undefined, timeout: o.timeout };
      const body = await api.ok(api.GET("/api/numbers/{id}/messages/next", { params: { path: { id }, query } }));
      if (body.data === null) {
        if (o.json) console.log(JSON.stringify(body, null, 2));
        throw new CliError(`No message${o.code ? " with a code" : ""} arrived within ${o.timeout} s.`);
      }
      const message = body.data;
      emit(o, body, () => (o.code ? (message.code ?? "") : message.text));
    });

  orgOption(messages.command("tail"))
    .description("follow a number live: messages received and status changes of those sent (--json: one JSON object per line)")
    .requiredOption("--number <number>", "hosted SIM id or E.164 number", numberRef)
    .option("--count <n>", "stop after this many events", positiveInt)
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ number: number | string; count?: number }>(cmd);
      const api = createApiClient(o);
      const id = await resolveNumberId(api, o.number);
      const sim = await api.ok(api.GET("/api/numbers/{id}", { params: { path: { id } } })); // a clear "not found" before listening
      const stop = untilStopped();
      const seen = new Set<string>();
      let events = 0;
      const subscription = await subscribe(api, [`private-number.${id}`], (_channel, event, data: { message?: Message }) => {
        const m = data?.message;
        if (!m || (event !== "message.received" && event !== "message.status_changed")) return;
        const key = `${m.id}:${m.status}`; // events come at least once
        if (seen.has(key)) return;
        seen.add(key);
        console.log(o.json ? JSON.stringify({ event, message: m }) : tailLine(event, m));
        if (o.count && ++events >= o.count) stop.done();
      });
      try {
        await subscription.subscribed;
        process.stderr.write(`Following number ${sim.data.number}; Ctrl-C to stop.\n`);
        await stop.stopped;
      } finally {
        subscription.close();
      }
    });
}
