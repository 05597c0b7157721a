import { type Command, Option } from "commander";
import type { Sql } from "../../server/db/client";
import { withAdminDb } from "../admin-db";
import { e164, each, globals, positiveInt } from "../args";
import { CliError, emit, statusColor, table } from "../output";
import type { HostedSim } from "./numbers";

/** A hosted SIM with the fields of SPEC.md 2.1 (no lock: the pool listing is not one organization's view). */
type PoolNumber = Omit<HostedSim, "locked" | "lock"> & { created_at: string; updated_at: string };

async function findPoolNumbers(sql: Sql, where: { ids?: number[]; type?: string }): Promise<PoolNumber[]> {
  const rows = await sql<(Omit<PoolNumber, "created_at" | "updated_at"> & { created_at: Date; updated_at: Date })[]>`
    select h.id, h.number, h.provider, h.status, h.type, h.shared_max_orgs, h.messages_received_count, h.created_at, h.updated_at,
      coalesce((select json_agg(json_build_object('id', o.id, 'name', o.name, 'alias', a.alias, 'team_id', a.team_id) order by o.id)
                from hosted_sim_organizations a join organizations o on o.id = a.organization_id where a.hosted_sim_id = h.id), '[]') as organizations,
      coalesce((select json_agg(json_build_object('id', t.id, 'name', t.name) order by t.id)
                from hosted_sim_organizations a join teams t on t.id = a.team_id where a.hosted_sim_id = h.id), '[]') as teams
    from hosted_sims h
    where ${where.ids ? sql`h.id = any(${where.ids})` : sql`h.provider <> 'byos'`}
      ${where.type ? sql`and h.type = ${where.type}` : sql``}
    order by h.id`;
  return rows.map((r) => ({ ...r, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() }));
}

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
      const unique = [...new Set(numbers)];
      const added = await withAdminDb((sql) =>
        sql.begin(async (tx) => {
          const taken = await tx<{ number: string }[]>`select number from hosted_sims where number = any(${unique}) order by number`;
          if (taken.length > 0) throw new CliError(`Already in the pool: ${taken.map((t) => t.number).join(", ")}.`);
          const rows = unique.map((number) => ({ number, provider: o.provider, type: o.type, shared_max_orgs: maxOrgs }));
          const ids = await tx<{ id: number }[]>`insert into hosted_sims ${tx(rows, "number", "provider", "type", "shared_max_orgs")} returning id`;
          return findPoolNumbers(tx, { ids: ids.map((r) => r.id) });
        }),
      );
      emit(o, { data: added }, () => `Added ${added.length} number${added.length === 1 ? "" : "s"} to the pool.\n${table(added, columns)}`);
    });

  pool
    .command("list")
    .description("pool numbers and how many of their seats organizations use (BYOS device numbers are not listed)")
    .addOption(new Option("--type <type>", "only this type").choices(["shared", "virtual"]))
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ type?: string }>(cmd);
      const numbers = await withAdminDb((sql) => findPoolNumbers(sql, { type: o.type }));
      const data = numbers.map((n) => ({ ...n, seats_used: n.organizations.length, seats_free: Math.max(0, n.shared_max_orgs - n.organizations.length) }));
      emit(o, { data }, () => table(numbers, columns));
    });
}
