import { type Command, Option } from "commander";
import type { ApiAnswer } from "../../clients/api";
import { type ApiClient, createApiClient } from "../api-client";
import { globals, numberRef, orgOption, positiveInt } from "../args";
import { CliError, details, emit, statusColor, table } from "../output";

type HostedSim = ApiAnswer<"/api/numbers/{id}", "get">["data"];

/** The hosted SIM id of a number given by id or by its E.164 number (looked up among the organization's). */
export async function resolveNumberId(api: ApiClient, ref: number | string): Promise<number> {
  if (typeof ref === "number") return ref;
  const body = await api.ok(api.GET("/api/numbers"));
  const found = body.data.find((n) => n.number === ref);
  if (!found) throw new CliError(`No number ${ref} in your organization.`);
  return Number(found.id); // documented as string | number (Elysia's t.Integer in the response schema)
}

/** Your organization's lock with how it ends (its time, or the first SMS under it, from one sender or any), another's, or none. */
const lockText = (n: HostedSim) => {
  if (!n.lock) return n.locked ? "by another organization" : "-";
  const until = `until ${n.lock.locked_until}`;
  if (!n.lock.release_on_message) return until;
  return `${until} or the first SMS${n.lock.sender === null ? "" : ` from ${n.lock.sender}`}`;
};

const columns = [
  { header: "ID", value: (n: HostedSim) => n.id },
  { header: "NUMBER", value: (n: HostedSim) => n.number },
  { header: "TYPE", value: (n: HostedSim) => n.type },
  { header: "STATUS", value: (n: HostedSim) => n.status, color: (s: string) => statusColor(s.trim()) + s.slice(s.trimEnd().length) },
  { header: "ALIAS", value: (n: HostedSim) => n.organizations[0]?.alias ?? "-" },
  { header: "TEAM", value: (n: HostedSim) => n.teams.map((t) => t.name).join(", ") || "-" },
  { header: "RECEIVED", value: (n: HostedSim) => n.messages_received_count },
  { header: "LOCK", value: lockText },
];

const showNumber = (n: HostedSim) =>
  details([
    ["id", n.id],
    ["number", n.number],
    ["type", n.type],
    ["status", n.status],
    ["alias", n.organizations[0]?.alias ?? null],
    ["team", n.teams.map((t) => t.name).join(", ") || null],
    ["lock", lockText(n)],
  ]);

export function registerNumbers(program: Command): void {
  const numbers = program.command("numbers").description("your organization's numbers (hosted SIMs)");

  orgOption(numbers.command("list"))
    .description("list the numbers of the organization")
    .addOption(new Option("--type <type>", "only this type").choices(["shared", "virtual"]))
    .addOption(new Option("--status <status>", "only this status").choices(["active", "inactive"]))
    .option("--team <team-id>", "only the numbers of this team", positiveInt)
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ type?: "shared" | "virtual"; status?: "active" | "inactive"; team?: number }>(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.GET("/api/numbers", { params: { query: { type: o.type, status: o.status, team_id: o.team } } }));
      emit(o, body, () => table(body.data, columns));
    });

  orgOption(numbers.command("show"))
    .description("one number")
    .argument("<number>", "hosted SIM id or E.164 number", numberRef)
    .action(async (ref: number | string, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.GET("/api/numbers/{id}", { params: { path: { id: await resolveNumberId(api, ref) } } }));
      emit(o, body, () => showNumber(body.data));
    });

  orgOption(numbers.command("order"))
    .description("take a free number from the shared pool for the organization (admin role)")
    .option("--team <team-id>", "assign it to this team", positiveInt)
    .option("--alias <alias>", "your organization's alias of it")
    .action(async (_opts, cmd: Command) => {
      const o = globals<{ team?: number; alias?: string }>(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.POST("/api/numbers/order", { body: { team_id: o.team, alias: o.alias } }));
      emit(o, body, () => `Ordered ${body.data.number} (id ${body.data.id}).`);
    });

  orgOption(numbers.command("lock"))
    .description("take a number for yourself for a while: its SMS reach only your organization")
    .argument("<number>", "hosted SIM id or E.164 number", numberRef)
    .option("--duration <seconds>", "how long (60 to 3600, default 600)", positiveInt)
    .option("--team <team-id>", "lock on behalf of this team", positiveInt)
    .option("--release-on-message", "end the lock by itself when the first SMS under it arrives (after it was forwarded)")
    .option("--sender <sender>", "with --release-on-message: only an SMS from this sender ends the lock")
    .action(async (ref: number | string, _opts, cmd: Command) => {
      const o = globals<{ duration?: number; team?: number; releaseOnMessage?: boolean; sender?: string }>(cmd);
      if (o.sender !== undefined && !o.releaseOnMessage) cmd.error("error: --sender needs --release-on-message"); // usage error: exit 2
      const api = createApiClient(o);
      const id = await resolveNumberId(api, ref);
      const options = o.releaseOnMessage ? { release_on_message: true, sender: o.sender } : {};
      const body = await api.ok(
        api.POST("/api/numbers/{id}/lock", { params: { path: { id } }, body: { duration_seconds: o.duration, team_id: o.team, ...options } }),
      );
      emit(o, body, () => `Locked ${body.data.number} ${lockText(body.data)}.`);
    });

  orgOption(numbers.command("unlock"))
    .description("release your lock on a number")
    .argument("<number>", "hosted SIM id or E.164 number", numberRef)
    .action(async (ref: number | string, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const id = await resolveNumberId(api, ref);
      // Unlocking an unlocked number succeeds (the wanted state); only what it was before tells a person which happened.
      const before = await api.ok(api.GET("/api/numbers/{id}", { params: { path: { id } } }));
      const body = await api.ok(api.POST("/api/numbers/{id}/unlock", { params: { path: { id } } }));
      emit(o, body, () => (before.data.lock ? `Unlocked ${body.data.number}.` : `${body.data.number} was not locked by your organization.`));
    });

  orgOption(numbers.command("alias"))
    .description("set your organization's alias of a number (--clear removes it)")
    .argument("<number>", "hosted SIM id or E.164 number", numberRef)
    .argument("[alias]", "1 to 64 characters")
    .option("--clear", "remove the alias")
    .action(async (ref: number | string, alias: string | undefined, _opts, cmd: Command) => {
      const o = globals<{ clear?: boolean }>(cmd);
      if (Boolean(o.clear) === (alias !== undefined)) cmd.error("error: give either an alias or --clear", { exitCode: 2, code: "simhost.usage" });
      const api = createApiClient(o);
      const id = await resolveNumberId(api, ref);
      const body = await api.ok(api.PATCH("/api/numbers/{id}/alias", { params: { path: { id } }, body: { alias: o.clear ? null : alias! } }));
      const set = body.data.organizations[0]?.alias;
      emit(o, body, () => (set ? `${body.data.number} is now "${set}".` : `${body.data.number} has no alias.`));
    });
}
