import { Argument, type Command, Option } from "commander";
import { type Admin, type DeadJob, type DeadJobSelection, PLANS, type Plan, type QueueCounts, ROLES, type Role } from "../../server/admin/operations";
import { withAdminOps } from "../admin-db";
import { each, email, globals, positiveInt } from "../args";
import { CliError, colors, emit, printable, table } from "../output";

const queueColumns = [
  { header: "QUEUE", value: (q: QueueCounts) => q.queue },
  { header: "WAITING", value: (q: QueueCounts) => q.waiting },
  { header: "RUNNING", value: (q: QueueCounts) => q.running },
  { header: "DEAD", value: (q: QueueCounts) => q.dead, color: (s: string) => (s.trim() === "0" ? s : colors.red(s)) },
  { header: "OLDEST DUE", value: (q: QueueCounts) => (q.oldest_due_seconds === null ? "-" : `${Math.round(q.oldest_due_seconds)} s`) },
];

const deadColumns = [
  { header: "ID", value: (j: DeadJob) => j.id },
  { header: "QUEUE", value: (j: DeadJob) => j.queue },
  { header: "ATTEMPTS", value: (j: DeadJob) => j.attempts },
  { header: "DIED", value: (j: DeadJob) => j.died_at.toISOString() },
  { header: "LAST ERROR", value: (j: DeadJob) => printable((j.last_error ?? "-").slice(0, 120)) },
];

type SelectOptions = { queue?: string; all?: boolean };

/** The one selection of a retry or discard: ids, --queue or --all (none, or two at once, is a usage error). */
function deadSelection(ids: number[], o: SelectOptions, cmd: Command): DeadJobSelection {
  const given = [ids.length > 0, o.queue !== undefined, o.all === true].filter(Boolean).length;
  if (given !== 1) cmd.error("error: name the dead jobs by id, or give --queue <name> or --all (one of them)", { exitCode: 2 });
  return ids.length > 0 ? { ids } : o.queue !== undefined ? { queue: o.queue } : { all: true };
}

/** What a retry or discard did; ids that were not dead jobs (unknown, or not dead) make it exit 1 after saying so. */
function reportSelection(o: SelectOptions & { json?: boolean }, ids: number[], done: number[], verb: string) {
  emit(o, { data: done }, () => `${verb} ${done.length} dead job${done.length === 1 ? "" : "s"}${done.length > 0 ? `: ${done.join(", ")}` : ""}.`);
  const missed = ids.filter((id) => !done.includes(id));
  if (missed.length > 0) throw new CliError(`Not dead jobs (unknown, or not dead): ${missed.join(", ")}.`);
}

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
        () => `User ${u.id} <${u.email}> is ${u.role} of organization ${o.org}${u.created ? "" : ` (existing user, ${u.outcome})`}.`,
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

  user
    .command("reset-2fa")
    .description("turn a user's two-factor authentication off (a lost authenticator) and end all their sessions and OAuth tokens, on every running server")
    .requiredOption("--email <email>", "email address", email)
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ email: string }>(cmd);
      const r = await withAdminOps((a) => a.resetTwoFactor(o.email));
      emit(
        o,
        r,
        () =>
          `Two-factor authentication is off for <${r.email}>; ${r.sessions_ended} session${r.sessions_ended === 1 ? "" : "s"} and ${r.grants_ended} OAuth grant${r.grants_ended === 1 ? "" : "s"} ended: they sign in again with their password.`,
      );
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

  const jobs = admin
    .command("jobs")
    .description("the job queue: what waits per queue, and dead jobs (work that gave up after its last attempt) to inspect, retry or discard");
  jobs
    .command("stats")
    .description("jobs per queue: waiting, running, dead, and how long the oldest due one has waited")
    .action(async (_opts, cmd: Command) => {
      const o = globals(cmd);
      const counts = await withAdminOps((a) => a.jobCounts());
      emit(o, { data: counts }, () => table(counts, queueColumns));
    });
  jobs
    .command("dead")
    .description("dead jobs, oldest first (--json adds each one's payload)")
    .option("--queue <name>", "only this queue")
    .option("--limit <n>", "at most this many", positiveInt, 100)
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ queue?: string; limit: number }>(cmd);
      const dead = await withAdminOps((a) => a.deadJobs({ queue: o.queue, limit: o.limit }));
      emit(o, { data: dead }, () => table(dead, deadColumns));
    });
  // retry and discard: the same selection (ids, --queue or --all), each its own operation.
  const selecting: [string, string, string, (a: Admin, s: DeadJobSelection) => Promise<number[]>][] = [
    [
      "retry",
      "run dead jobs again from their first attempt (the running servers take them within a second), once their cause is fixed",
      "Retrying",
      (a, s) => a.retryDeadJobs(s),
    ],
    ["discard", "remove dead jobs for good (the work they stood for is not done)", "Discarded", (a, s) => a.discardDeadJobs(s)],
  ];
  for (const [name, description, verb, operation] of selecting)
    jobs
      .command(name)
      .description(description)
      .argument("[id...]", "dead job ids", each(positiveInt))
      .option("--queue <name>", "every dead job of this queue")
      .option("--all", "every dead job")
      .action(async (ids: number[] | undefined, _opts, cmd: Command) => {
        const o = globals<SelectOptions>(cmd);
        const selection = deadSelection(ids ?? [], o, cmd);
        const done = await withAdminOps((a) => operation(a, selection));
        reportSelection(o, ids ?? [], done, verb);
      });
}
