import { type Command, InvalidArgumentError, Option } from "commander";
import type { ApiAnswer } from "../../clients/api";
import { createApiClient } from "../api-client";
import { e164, globals, instant, numberRef, orgOption, positiveInt } from "../args";
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
  ].join("  ");

type WaitOptions = { number: number | string; from?: string; contains?: string; code?: boolean; after?: string; timeout: number };

/** The API waits 1 to 120 s per call. */
function waitSeconds(value: string): number {
  const n = positiveInt(value);
  if (n > 120) throw new InvalidArgumentError("at most 120 seconds");
  return n;
}

type ListOptions = {
  number: number | string;
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
    .description("messages of a number, newest first")
    .requiredOption("--number <number>", "hosted SIM id or E.164 number", numberRef)
    .option("--since <time>", "from this date-time, or this long ago (15m, 2h, 7d)", instant)
    .option("--until <time>", "before this date-time, or this long ago", instant)
    .addOption(new Option("--direction <direction>", "only inbound or outbound").choices(["inbound", "outbound"]))
    .option("--search <text>", "text contains (case-insensitive)")
    .option("--limit <n>", "messages per page (1 to 100, default 50)", positiveInt)
    .option("--page <n>", "page (default 1)", positiveInt)
    .action(async (_opts, cmd: Command) => {
      const o = globals<ListOptions>(cmd);
      const api = createApiClient(o);
      const hostedSim = await resolveNumberId(api, o.number);
      const query = { hosted_sim: hostedSim, since: o.since, until: o.until, direction: o.direction, q: o.search, per_page: o.limit, page: o.page };
      const body = await api.ok(api.GET("/api/messages", { params: { query } }));
      emit(o, body, () => {
        const { meta } = body;
        const footer = meta && Number(meta.last_page) > 1 ? `\npage ${meta.current_page} of ${meta.last_page} (${meta.total} messages); --page for more` : "";
        return table(body.data, columns) + footer;
      });
    });

  orgOption(messages.command("send"))
    .description("send an SMS from one of your numbers (counted against the plan)")
    .requiredOption("--number <number>", "hosted SIM id or E.164 number to send from", numberRef)
    .requiredOption("--to <phone>", "recipient, E.164", e164)
    .requiredOption("--text <text>", "message text (1 to 1600 characters)")
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ number: number | string; to: string; text: string }>(cmd);
      const api = createApiClient(o);
      const hostedSim = await resolveNumberId(api, o.number);
      const body = await api.ok(api.POST("/api/messages", { body: { hosted_sim: hostedSim, to: o.to, text: o.text } }));
      emit(o, body, () => `Message ${body.data.id} to ${body.data.to} is ${body.data.status}.`);
    });

  orgOption(messages.command("wait"))
    .description(
      "wait for the next message on a number and print its text (--code: only its one-time code; --json: the whole message); exit 1 when none arrives in time",
    )
    .requiredOption("--number <number>", "hosted SIM id or E.164 number", numberRef)
    .option("--from <phone>", "only from this sender (exact)")
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
