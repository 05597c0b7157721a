import { Argument, type Command, Option } from "commander";
import type { Pool } from "../../server/db/client";
import { withAdminDb } from "../admin-db";
import { email, globals, positiveInt } from "../args";
import { CliError, emit } from "../output";

export const PLANS = ["free", "pro", "enterprise"] as const;
const ROLES = ["owner", "admin", "member"] as const;

/** The `admin` group; command modules adding admin subcommands (oauth-client, ...) attach here. */
export function adminGroup(program: Command): Command {
  return (
    program.commands.find((c) => c.name() === "admin") ??
    program.command("admin").description("operator commands on the database directly (DATABASE_URL, else the embedded one under DATA_DIR)")
  );
}

type Org = { id: number; name: string; plan: string };

export function registerAdmin(program: Command): void {
  const admin = adminGroup(program);

  admin
    .command("org")
    .description("organizations")
    .command("create <name>")
    .description("create an organization")
    .addOption(new Option("--plan <plan>", "plan").choices(PLANS).default("free"))
    .action(async (name: string, _opts, cmd: Command) => {
      const o = globals<{ plan: string }>(cmd);
      if (!name.trim()) throw new CliError("The organization name must not be empty.");
      const org = await withAdminDb(async (sql) => {
        const [row] = await sql<Org[]>`insert into organizations (name, plan) values (${name.trim()}, ${o.plan}) returning id, name, plan`;
        return row!;
      });
      emit(o, org, () => `Created organization ${org.id} "${org.name}" (plan ${org.plan}).`);
    });

  admin
    .command("user")
    .description("users")
    .command("create")
    .description("create a user in an organization; an existing email gets the membership added (its password is left unchanged)")
    .requiredOption("--org <org id>", "organization id", positiveInt)
    .requiredOption("--email <email>", "email address", email)
    .requiredOption("--password <password>", "password (at least 8 characters)")
    .option("--name <name>", "display name (default: the part of the email before @)")
    .addOption(new Option("--role <role>", "role in the organization (default: owner for its first member, else member)").choices(ROLES))
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ org: number; email: string; password: string; name?: string; role?: string }>(cmd);
      if (o.password.length < 8) throw new CliError("The password must have at least 8 characters.");
      const user = await withAdminDb((sql) => createUser(sql, { ...o, orgId: o.org }));
      emit(
        o,
        { id: user.id, email: user.email },
        () => `User ${user.id} <${user.email}> is ${user.role} of organization ${o.org}${user.created ? "" : " (existing user, membership added)"}.`,
      );
    });

  admin
    .command("plan")
    .description("plans")
    .command("set")
    .description("change an organization's plan")
    .argument("<org-id>", "organization id", positiveInt)
    .addArgument(new Argument("<plan>", "new plan").choices(PLANS))
    .action(async (id: number, plan: string, _opts, cmd: Command) => {
      const o = globals(cmd);
      const org = await withAdminDb(async (sql) => {
        const [row] = await sql<Org[]>`update organizations set plan = ${plan}, updated_at = now() where id = ${id} returning id, name, plan`;
        if (!row) throw new CliError(`Organization ${id} not found.`);
        return row;
      });
      emit(o, org, () => `Organization ${org.id} "${org.name}" is now on plan ${org.plan}.`);
    });
}

type NewUser = { orgId: number; email: string; password: string; name?: string; role?: string };

async function createUser(sql: Pool, u: NewUser) {
  const hash = await Bun.password.hash(u.password, { algorithm: "argon2id" });
  return sql.begin(async (tx) => {
    const [org] = await tx<
      { members: number }[]
    >`select (select count(*) from memberships where organization_id = o.id)::int as members from organizations o where o.id = ${u.orgId}`;
    if (!org) throw new CliError(`Organization ${u.orgId} not found.`);
    let [user] = await tx<{ id: number; email: string }[]>`select id, email from users where lower(email) = lower(${u.email})`;
    const created = !user;
    if (!user) {
      [user] = await tx<{ id: number; email: string }[]>`
        insert into users (name, email, password_hash) values (${u.name ?? u.email.split("@")[0]!}, ${u.email}, ${hash}) returning id, email`;
    }
    const role = u.role ?? (org.members === 0 ? "owner" : "member");
    const [membership] = await tx<{ role: string }[]>`
      insert into memberships (user_id, organization_id, role) values (${user!.id}, ${u.orgId}, ${role})
      on conflict (user_id, organization_id) do update set role = case when ${u.role !== undefined} then excluded.role else memberships.role end
      returning role`;
    return { id: user!.id, email: user!.email, role: membership!.role, created };
  });
}
