import type { Command } from "commander";
import { createApiClient } from "../api-client";
import { globals } from "../args";
import { CliError, emit, statusColor, table } from "../output";

export function registerHealth(program: Command): void {
  program
    .command("health")
    .description("the server's health check (no login needed); exits 1 when it is not ok")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.anonymous.GET("/api/health"), [503]);
      const checks = Object.entries(body.checks ?? {}).map(([name, c]) => ({ name, ...c }));
      emit(o, body, () =>
        [
          `${api.url}: ${statusColor(body.status)}`,
          table(checks, [
            { header: "CHECK", value: (c) => c.name },
            { header: "STATUS", value: (c) => c.status, color: (s) => statusColor(s.trim()) + s.slice(s.trimEnd().length) },
            { header: "MESSAGE", value: (c) => c.message },
            { header: "ERROR", value: (c) => c.error ?? "" },
          ]),
        ].join("\n"),
      );
      if (body.status !== "ok") {
        const failing = checks.filter((c) => c.status !== "ok").map((c) => `${c.name} ${c.error ?? c.message}`);
        throw new CliError(`Server is ${body.status}: ${failing.join("; ") || "no details"}.`);
      }
    });
}
