import { Argument, type Command, Option } from "commander";
import { PLANS, type Plan, ROLES, type Role } from "../../server/admin/operations";
import { withAdminOps } from "../admin-db";
import { email, globals, positiveInt } from "../args";
import { emit } from "../output";

/** The `admin` group; command modules adding admin subcommands (oauth-client, ...) attach here. */
export function adminGroup(program: Command): Command {
  return (
    program.commands.find((c) => c.name() === "admin") ??
    program.command("admin").description("operator commands on the database directly (DATABASE_URL, else the embedded one under DATA_DIR)")
  );
}

export function registerAdmin(program: Command): void {
  const admin = adminGroup(program);

  admin
    .command("org")
    .description("organizations")
    .command("create <name>")
    .description("create an organization")
    .addOption(new Option("--plan <plan>", "plan").choices(PLANS).default("free"))
    .action(async (name: string, _opts, cmd: Command) => {
      const o = globals<{ plan: Plan }>(cmd);
      const org = await withAdminOps((a) => a.createOrganization(name, o.plan));
      emit(o, org, () => `Created organization ${org.id} "${org.name}" (plan ${org.plan}).`);
    });

  const user = admin.command("user").description("users");
  user
    .command("create")
    .description("create a user in an organization; an existing email gets the membership added (its password is left unchanged)")
    .requiredOption("--org <org id>", "organization id", positiveInt)
    .requiredOption("--email <email>", "email address", email)
    .requiredOption("--password <password>", "password (at least 8 characters)")
    .option("--name <name>", "display name (default: the part of the email before @)")
    .addOption(new Option("--role <role>", "role in the organization (default: owner for its first member, else member)").choices(ROLES))
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ org: number; email: string; password: string; name?: string; role?: Role }>(cmd);
      const u = await withAdminOps((a) => a.addUser({ ...o, organizationId: o.org }));
      emit(
        o,
        { id: u.id, email: u.email },
        () => `User ${u.id} <${u.email}> is ${u.role} of organization ${o.org}${u.created ? "" : " (existing user, membership added)"}.`,
      );
    });

  user
    .command("remove")
    .description("remove a user from an organization; their sessions and tokens stop acting in it at once, on every running server")
    .requiredOption("--org <org id>", "organization id", positiveInt)
    .requiredOption("--email <email>", "email address", email)
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ org: number; email: string }>(cmd);
      const removed = await withAdminOps((a) => a.removeUser(o.org, o.email));
      emit(o, removed, () => `User ${removed.id} <${removed.email}> is no longer a member of organization ${o.org}.`);
    });

  admin
    .command("plan")
    .description("plans")
    .command("set")
    .description("change an organization's plan")
    .argument("<org-id>", "organization id", positiveInt)
    .addArgument(new Argument("<plan>", "new plan").choices(PLANS))
    .action(async (id: number, plan: Plan, _opts, cmd: Command) => {
      const o = globals(cmd);
      const org = await withAdminOps((a) => a.setPlan(id, plan));
      emit(o, org, () => `Organization ${org.id} "${org.name}" is now on plan ${org.plan}.`);
    });
}
