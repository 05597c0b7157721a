import { type Command, Option } from "commander";
import { createApiClient } from "../api-client";
import { globals, orgOption, positiveInt } from "../args";
import { emit, table } from "../output";

const PERMISSIONS = ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"] as const;
type Permission = (typeof PERMISSIONS)[number];

export function registerKeys(program: Command): void {
  const keys = program.command("keys").description("API keys of the organization (needs a session token, not an API key)");

  orgOption(keys.command("list"))
    .description("list the API keys")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.GET("/api/api-keys"));
      emit(o, body, () =>
        table(body.data, [
          { header: "ID", value: (k) => k.id },
          { header: "NAME", value: (k) => k.name },
          { header: "PREFIX", value: (k) => k.key_prefix },
          { header: "PERMISSIONS", value: (k) => k.permissions.join(",") || "-" },
          { header: "LAST USED", value: (k) => k.last_used_at ?? "never" },
          { header: "CREATED", value: (k) => k.created_at },
        ]),
      );
    });

  orgOption(keys.command("create"))
    .description("create an API key; its full value is shown only now")
    .requiredOption("--name <name>", "display name")
    .addOption(new Option("--permission <permission...>", "what the key may do (repeatable)").choices(PERMISSIONS).makeOptionMandatory())
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ name: string; permission: Permission[] }>(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.POST("/api/api-keys", { body: { name: o.name, permissions: [...new Set(o.permission)] } }));
      emit(o, body, () =>
        [
          `Created API key ${body.api_key.id} "${body.api_key.name}" (${body.api_key.permissions.join(", ")}).`,
          "Key (shown only now):",
          body.plain_text_key,
        ].join("\n"),
      );
    });

  orgOption(keys.command("revoke"))
    .description("delete an API key; it stops working at once")
    .argument("<key-id>", "API key id", positiveInt)
    .action(async (id: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      await api.ok(api.DELETE("/api/api-keys/{api_key}", { params: { path: { api_key: id } } }));
      emit(o, { id, revoked: true }, () => `API key ${id} revoked.`);
    });
}
