#!/usr/bin/env bun
import { Command, CommanderError, InvalidArgumentError } from "commander";
import pkg from "../package.json" with { type: "json" };
import { serverUrlProblem } from "./api-client";
import { registerAdmin } from "./commands/admin";
import { registerAuth } from "./commands/auth";
import { registerDevices } from "./commands/devices";
import { registerEvents } from "./commands/events";
import { registerHealth } from "./commands/health";
import { registerKeys } from "./commands/keys";
import { registerMessages } from "./commands/messages";
import { registerNumbers } from "./commands/numbers";
import { registerOAuthClient } from "./commands/oauth-client";
import { registerPool } from "./commands/pool";
import { registerSims } from "./commands/sims";
import { registerWebhooks } from "./commands/webhooks";
import { CliError } from "./output";

/**
 * One line per command module. A module adds its commands to the program; admin subcommands
 * attach to `adminGroup(program)` from ./commands/admin.
 */
// biome-ignore format: one module per line, so adding one is a one-line change
const commandModules: Array<(program: Command) => void> = [
  registerAdmin,
  registerPool,
  registerAuth,
  registerHealth,
  registerOAuthClient,
  registerKeys,
  registerNumbers,
  registerMessages,
  registerDevices,
  registerSims,
  registerWebhooks,
  registerEvents,
];

export function buildProgram(): Command {
  const program = new Command("simhost")
    .description("simhost operators' CLI. Exit codes: 0 ok, 1 error, 2 usage error.")
    .version(pkg.version)
    .option("--json", "machine-readable output on stdout")
    .option("--url <url>", "server URL (default: SIMHOST_URL, else http://localhost:3000)", (url) => {
      const problem = serverUrlProblem(url);
      if (problem) throw new InvalidArgumentError(problem);
      return url;
    })
    .option("--token <token>", "session token or API key to use (default: SIMHOST_TOKEN, else the one saved by login)")
    .showSuggestionAfterError()
    // Set before the subcommands are made so they inherit it: usage errors come back here (exit 2).
    .exitOverride();
  for (const register of commandModules) register(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 || e.code === "commander.helpDisplayed" || e.code === "commander.version" ? 0 : 2;
    const message = e instanceof CliError ? e.message : `Unexpected error: ${(e as Error)?.message ?? String(e)}`;
    process.stderr.write(`${message.split("\n")[0]}\n`);
    return 1;
  }
}

if (import.meta.main) process.exit(await main(process.argv));
