import { type Command, Option } from "commander";
import { createApiClient } from "../api-client";
import { globals, instant, instantAt, orgOption, positiveInt } from "../args";
import { CliError, details, emit, statusColor, table } from "../output";

const LOG_STATUSES = ["pending", "succeeded", "failed", "retrying"] as const;
type LogStatus = (typeof LOG_STATUSES)[number];

const paint = (s: string) => statusColor(s.trim()) + s.slice(s.trimEnd().length);

/** `--events message.received,device.online` (or `*`): event types, checked by the server (422 names an unknown one). */
const eventList = (value: string, previous: string[] | undefined) => [
  ...(previous ?? []),
  ...value
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean),
];
const EVENTS_HELP = 'event types to deliver, comma-separated or repeated (message.received, message.delivered, device.offline, ...; "*" for all)';

type ForwardingMode = "always" | "lock_required";
/** How a mapping forwards a team's messages (docs/api-notes.md "Forwarding"). */
const modeOption = () =>
  new Option("--mode <mode>", "always: every message of the team's numbers; lock_required: only those that came while the team held the number's lock")
    .choices(["always", "lock_required"])
    .default("always");

/** The server's limit on a replay's window (docs/api-notes.md): at most 7 days. */
const REPLAY_MAX_MS = 7 * 86_400_000;

/**
 * `--since`/`--until` are checked while parsing (a bad one is a usage error) and resolved in the
 * action against one clock reading: an age resolved at parsing and a default until taken later
 * made `--since 7d` a few milliseconds longer than the 7 days the server allows.
 */
function when(value: string): string {
  instant(value);
  return value;
}

type IntegrationOptions = { name?: string; endpoint?: string; events?: string[]; timeout?: number; retries?: number };

function integrationTable(i: { id: number; name: string; url: string; is_active: boolean; event_types: string[] }) {
  return details([
    ["id", i.id],
    ["name", i.name],
    ["url", i.url],
    ["active", i.is_active ? "active" : "inactive"],
    ["events", i.event_types.join(", ")],
  ]);
}

export function registerWebhooks(program: Command): void {
  const webhooks = program.command("webhooks").description("webhook integrations of the organization");

  orgOption(webhooks.command("list"))
    .description("integrations with their team mappings")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.GET("/api/webhook-integrations"));
      emit(o, body, () =>
        table(body.data, [
          { header: "ID", value: (i) => i.id },
          { header: "NAME", value: (i) => i.name },
          { header: "URL", value: (i) => i.url },
          { header: "ACTIVE", value: (i) => (i.is_active ? "active" : "inactive"), color: paint },
          { header: "EVENTS", value: (i) => i.event_types.join(",") },
          { header: "TEAMS", value: (i) => i.mappings.map((m) => `${m.team_name} (${m.forwarding_mode}${m.is_active ? "" : ", off"})`).join(", ") || "-" },
        ]),
      );
    });

  orgOption(webhooks.command("create"))
    .description("create an integration; its signing secret is shown only now")
    .requiredOption("--name <name>", "display name")
    .requiredOption("--endpoint <url>", "where events are POSTed (the integration's url)")
    .option("--events <types>", `${EVENTS_HELP}; default message.received`, eventList)
    .option("--team <team-id>", "map it to this team at once: message events reach an integration only through a team's mapping", positiveInt)
    .addOption(modeOption())
    .option("--timeout <seconds>", "seconds per attempt (1 to 120, default 30)", positiveInt)
    .option("--retries <n>", "retries after the first attempt (0 to 10, default 3)", (v) => (v === "0" ? 0 : positiveInt(v)))
    .action(async (_opts, cmd: Command) => {
      const o = globals<IntegrationOptions & { name: string; endpoint: string; team?: number; mode: ForwardingMode }>(cmd);
      // A mode belongs to a team's mapping: without --team there is none to give it to.
      if (o.team === undefined && cmd.getOptionValueSource("mode") === "cli")
        cmd.error("error: --mode applies to a team's mapping: give --team too, or map it later (simhost webhooks map <id> --team <team-id> --mode ...)", {
          exitCode: 2,
        });
      const api = createApiClient(o);
      const fields = { name: o.name, url: o.endpoint, event_types: o.events, timeout_seconds: o.timeout, retry_count: o.retries };
      // With a team, the integration and its mapping are made together (the team's route), or neither.
      const body =
        o.team === undefined
          ? await api.ok(api.POST("/api/webhook-integrations", { body: fields }))
          : await api.ok(api.POST("/api/teams/{team}/webhooks", { params: { path: { team: o.team } }, body: { ...fields, forwarding_mode: o.mode } }));
      const unmapped = o.team === undefined && (o.events ?? ["message.received"]).some((t) => t === "*" || t.startsWith("message."));
      emit(o, body, () =>
        [
          integrationTable(body.data),
          "Signing secret (shown only now):",
          body.data.secret,
          ...(unmapped ? [`Message events reach it only through a team's mapping: simhost webhooks map ${body.data.id} --team <team-id>`] : []),
        ].join("\n"),
      );
    });

  orgOption(webhooks.command("map"))
    .description("forward a team's message events to an integration (one mapping per team)")
    .argument("<integration-id>", "webhook integration id", positiveInt)
    .requiredOption("--team <team-id>", "the team whose numbers' messages it gets", positiveInt)
    .addOption(modeOption())
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals<{ team: number; mode: ForwardingMode }>(cmd);
      const api = createApiClient(o);
      const body = await api.ok(
        api.POST("/api/webhook-integrations/{webhook_integration}/mappings", {
          params: { path: { webhook_integration: id } },
          body: { team_id: o.team, forwarding_mode: o.mode },
        }),
      );
      emit(o, body, () => `Integration ${id} gets team ${o.team}'s message events (${o.mode}).`);
    });

  orgOption(webhooks.command("update"))
    .description("change an integration; what you leave out stays as it is")
    .argument("<integration-id>", "webhook integration id", positiveInt)
    .option("--name <name>", "display name")
    .option("--endpoint <url>", "where events are POSTed (the integration's url)")
    .option("--events <types>", EVENTS_HELP, eventList)
    .option("--timeout <seconds>", "seconds per attempt (1 to 120)", positiveInt)
    .option("--retries <n>", "retries after the first attempt (0 to 10)", (v) => (v === "0" ? 0 : positiveInt(v)))
    .addOption(new Option("--active <yes|no>", "turn deliveries on or off").choices(["yes", "no"]))
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals<IntegrationOptions & { active?: "yes" | "no" }>(cmd);
      const api = createApiClient(o);
      const path = { params: { path: { webhook_integration: id } } };
      // The update needs name and url: the current ones unless given.
      const current = (await api.okAsSent(api.GET("/api/webhook-integrations/{webhook_integration}", path))).data;
      const body = await api.ok(
        api.PATCH("/api/webhook-integrations/{webhook_integration}", {
          ...path,
          body: {
            name: o.name ?? current.name,
            url: o.endpoint ?? current.url,
            event_types: o.events,
            timeout_seconds: o.timeout,
            retry_count: o.retries,
            is_active: o.active === undefined ? undefined : o.active === "yes",
          },
        }),
      );
      emit(o, body, () => integrationTable(body.data));
    });

  orgOption(webhooks.command("replay"))
    .description("send the integration's events of a window again (same webhook-ids; at most 7 days, 10,000 events)")
    .argument("<integration-id>", "webhook integration id", positiveInt)
    .requiredOption("--since <when>", "start: ISO 8601 date-time or an age (2h, 1d)", when)
    .option("--until <when>", "end: ISO 8601 date-time or an age (default now)", when)
    .option("--events <types>", "only these event types (of those the integration gets)", eventList)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals<{ since: string; until?: string; events?: string[] }>(cmd);
      const now = Date.now();
      const since = instantAt(o.since, now);
      // The server's answer would name an until the user never gave: say it in terms of --since.
      if (o.until === undefined && now - Date.parse(since) > REPLAY_MAX_MS)
        cmd.error("error: --since is more than 7 days ago; a replay covers at most 7 days: give --until too", { exitCode: 2 });
      if (o.until === undefined && Date.parse(since) >= now) cmd.error("error: --since is not in the past; give --until too", { exitCode: 2 });
      const until = o.until === undefined ? new Date(now).toISOString() : instantAt(o.until, now);
      const api = createApiClient(o);
      const body = await api.ok(
        api.POST("/api/webhook-integrations/{webhook_integration}/replay", {
          params: { path: { webhook_integration: id } },
          body: { since, until, event_types: o.events },
        }),
      );
      const d = body.data;
      emit(o, body, () => `Replaying ${d.deliveries} event(s) from ${d.since} to ${d.until} (${d.event_types.join(", ")}).`);
    });

  orgOption(webhooks.command("redeliver"))
    .description("deliver the event of a log record again (same webhook-id)")
    .argument("<integration-id>", "webhook integration id", positiveInt)
    .argument("<log-id>", "delivery log record id (webhooks logs)", positiveInt)
    .action(async (id: number, logId: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(
        api.POST("/api/webhook-integrations/{webhook_integration}/logs/{log}/redeliver", { params: { path: { webhook_integration: id, log: logId } } }),
      );
      emit(o, body, () => `Redelivering ${body.data.event_type} ${body.data.event_id} (delivery ${body.data.delivery_id}).`);
    });

  orgOption(webhooks.command("logs"))
    .description("delivery log of an integration, newest first")
    .argument("<integration-id>", "webhook integration id", positiveInt)
    .addOption(new Option("--status <status>", "only this outcome").choices(LOG_STATUSES))
    .option("--limit <n>", "records per page (1 to 100)", positiveInt)
    .option("--page <n>", "page (default 1)", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals<{ status?: LogStatus; limit?: number; page?: number }>(cmd);
      const api = createApiClient(o);
      const body = await api.ok(
        api.GET("/api/webhook-integrations/{webhook_integration}/logs", {
          params: { path: { webhook_integration: id }, query: { status: o.status, per_page: o.limit, page: o.page } },
        }),
      );
      emit(o, body, () =>
        table(body.data, [
          { header: "ID", value: (l) => l.id },
          { header: "AT", value: (l) => l.created_at },
          { header: "EVENT", value: (l) => l.event_type },
          { header: "MESSAGE", value: (l) => l.message_id },
          { header: "TRY", value: (l) => l.attempt },
          { header: "STATUS", value: (l) => l.status, color: paint },
          { header: "HTTP", value: (l) => l.http_status },
          { header: "MS", value: (l) => l.response_time_ms },
          // A failed attempt has its error and, while retries are left, when the next one is due.
          { header: "ERROR", value: (l) => [l.error, l.next_retry_at && `retry at ${l.next_retry_at}`].filter(Boolean).join("; ") },
        ]),
      );
    });

  orgOption(webhooks.command("test"))
    .description("send a test event to the integration's URL; exits 1 when the endpoint did not answer 2xx")
    .argument("<integration-id>", "webhook integration id", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.POST("/api/webhook-integrations/{webhook_integration}/test", { params: { path: { webhook_integration: id } } }));
      emit(o, body, () =>
        details([
          ["success", body.success ? statusColor("ok") : statusColor("failed")],
          ["http status", body.http_status],
          ["time", `${body.response_time_ms} ms`],
          ["response", body.response_body.slice(0, 500)],
        ]),
      );
      if (!body.success) throw new CliError(`Test delivery failed${body.http_status ? ` with HTTP ${body.http_status}` : ""}.`);
    });
}
