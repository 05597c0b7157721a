import { type Command, Option } from "commander";
import type { PoolNumber } from "../../server/admin/operations";
import { withAdminOps } from "../admin-db";
import { e164, each, globals, positiveInt } from "../args";
import { emit, statusColor, table } from "../output";

const columns = [
  { header: "ID", value: (n: PoolNumber) => n.id },
  { header: "NUMBER", value: (n: PoolNumber) => n.number },
  { header: "TYPE", value: (n: PoolNumber) => n.type },
  { header: "PROVIDER", value: (n: PoolNumber) => n.provider },
  { header: "STATUS", value: (n: PoolNumber) => n.status, color: (s: string) => statusColor(s.trim()) + s.slice(s.trimEnd().length) },
  { header: "SEATS", value: (n: PoolNumber) => `${n.organizations.length}/${n.shared_max_orgs}` },
  { header: "ORGANIZATIONS", value: (n: PoolNumber) => n.organizations.map((o) => `${o.name} (${o.id})`).join(", ") || "-" },
];

type AddOptions = { provider: string; type: "shared" | "virtual"; maxOrgs?: number };

export function registerPool(program: Command): void {
  const pool = program.command("pool").description("the number pool (on the database directly, like admin commands)");

  pool
    .command("add")
    .description("add numbers to the pool")
    .argument("<number...>", "E.164 phone numbers", each(e164))
    .option("--provider <label>", "provider label", "default")
    .addOption(new Option("--type <type>", "number type").choices(["shared", "virtual"]).default("shared"))
    .option("--max-orgs <n>", "organizations that may share a number (default 5 for shared, 1 for virtual)", positiveInt)
    .action(async (numbers: string[], _opts, cmd: Command) => {
      const o = globals<AddOptions>(cmd);
      const maxOrgs = o.maxOrgs ?? (o.type === "shared" ? 5 : 1);
      const added = await withAdminOps((a) => a.addPoolNumbers({ numbers, provider: o.provider, type: o.type, sharedMaxOrgs: maxOrgs }));
      emit(o, { data: added }, () => `Added ${added.length} number${added.length === 1 ? "" : "s"} to the pool.\n${table(added, columns)}`);
    });

  pool
    .command("list")
    .description("pool numbers and how many of their seats organizations use (BYOS device numbers are not listed)")
    .addOption(new Option("--type <type>", "only this type").choices(["shared", "virtual"]))
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ type?: string }>(cmd);
      const numbers = await withAdminOps((a) => a.listPoolNumbers(o.type));
      const data = numbers.map((n) => ({ ...n, seats_used: n.organizations.length, seats_free: Math.max(0, n.shared_max_orgs - n.organizations.length) }));
      emit(o, { data }, () => table(numbers, columns));
    });
}
