import { type Command, Option } from "commander";
import { createApiClient } from "../api-client";
import { globals, orgOption, positiveInt } from "../args";
import { CliError, details, emit, statusColor, table } from "../output";

type Integration = {
  id: number;
  name: string;
  url: string;
  is_active: boolean;
  mappings: { team_name: string; forwarding_mode: string; is_active: boolean }[];
};
type LogRecord = {
  id: number;
  event_type: string;
  message_id: number | null;
  attempt: number;
  status: string;
  http_status: number | null;
  response_time_ms: number | null;
  error: string | null;
  next_retry_at: string | null;
  created_at: string;
};
type TestOutcome = { success: boolean; http_status: number | null; response_body: string; response_time_ms: number };

const paint = (s: string) => statusColor(s.trim()) + s.slice(s.trimEnd().length);

export function registerWebhooks(program: Command): void {
  const webhooks = program.command("webhooks").description("webhook integrations of the organization");

  orgOption(webhooks.command("list"))
    .description("integrations with their team mappings")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const { body } = await createApiClient(o).get<{ data: Integration[] }>("/api/webhook-integrations");
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
    .addOption(new Option("--status <status>", "only this outcome").choices(["pending", "succeeded", "failed", "retrying"]))
    .option("--limit <n>", "records per page (1 to 100)", positiveInt)
    .option("--page <n>", "page (default 1)", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals<{ status?: string; limit?: number; page?: number }>(cmd);
      const { body } = await createApiClient(o).get<{ data: LogRecord[] }>(`/api/webhook-integrations/${id}/logs`, {
        query: { status: o.status, per_page: o.limit, page: o.page },
      });
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
      const { body } = await createApiClient(o).post<TestOutcome>(`/api/webhook-integrations/${id}/test`);
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
