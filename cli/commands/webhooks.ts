import { type Command, Option } from "commander";
import { createApiClient } from "../api-client";
import { globals, orgOption, positiveInt } from "../args";
import { CliError, details, emit, statusColor, table } from "../output";

const LOG_STATUSES = ["pending", "succeeded", "failed", "retrying"] as const;
type LogStatus = (typeof LOG_STATUSES)[number];

const paint = (s: string) => statusColor(s.trim()) + s.slice(s.trimEnd().length);

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
          { header: "TEAMS", value: (i) => i.mappings.map((m) => `${m.team_name} (${m.forwarding_mode}${m.is_active ? "" : ", off"})`).join(", ") || "-" },
        ]),
      );
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
          { header: "ERROR", value: (l) => l.error ?? (l.next_retry_at ? `retry at ${l.next_retry_at}` : "") },
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
