#!/usr/bin/env bun
import { Command, Option } from "commander";
import { ApiError, type Credentials } from "./api";
import { formatReport, runFleet } from "./fleet";
import { latencyAndErrorLines } from "./fleet-report";
import { account, duration, factor, num, numbers, share, slots } from "./options";
import { defaultAccountSid, forwardToServer, startProvider } from "./provider";
import { createRandom, resolveSeed } from "./random";
import { runDevice } from "./run-device";
import { loadScenario, parseDuration, ScenarioError } from "./scenario";

// Defaults match the server's own (server/config.ts), so a local run needs no flags.
const env = process.env;
const DEFAULT_SERVER = env.SIMHOST_URL ?? `http://127.0.0.1:${env.PORT ?? 3000}`;
const DEFAULT_TOKEN = env.PROVIDER_AUTH_TOKEN ?? "dev-provider-token";
const DEFAULT_NUMBER = env.PROVIDER_NUMBER ?? "+15005550006";
const DEFAULT_PROVIDER_URL = env.PROVIDER_API_URL ?? "http://127.0.0.1:3100";

/** The URL the server believes it has: PUBLIC_URL, else its own default http://localhost:PORT. */
function publicUrlFor(server: string, given?: string) {
  return given ?? env.PUBLIC_URL ?? `http://localhost:${new URL(server).port || 80}`;
}

/** Mean gap between random SMS when `--sms N` is given without `--sms-every`. */
const DEFAULT_SMS_EVERY_MS = 1000;

const program = new Command("device-sim")
  .description("Simulated Android devices and SMS provider for simhost")
  .enablePositionalOptions()
  .showHelpAfterError()
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

const provider = program.command("provider").description("run the emulated SMS provider (inbound callback + outbound API)").enablePositionalOptions();
provider
  .option("--port <port>", "port to listen on", num("port"), Number(new URL(DEFAULT_PROVIDER_URL).port || 3100))
  .option("--host <host>", "address to listen on", "127.0.0.1")
  .option("--server <url>", "simhost server", DEFAULT_SERVER)
  .option("--public-url <url>", "the server's PUBLIC_URL (signed in the callback)")
  .option("--token <token>", "PROVIDER_AUTH_TOKEN", DEFAULT_TOKEN)
  .option("--number <e164>", "PROVIDER_NUMBER", DEFAULT_NUMBER)
  .option("--account-sid <sid>", "AccountSid sent in callbacks", defaultAccountSid)
  .option("--fail-rate <share>", "share of outbound API calls answered 503", share("fail-rate"), 0)
  .option("--undelivered-rate <share>", "share of accepted outbound messages reported undelivered (status callback, error 30003)", share("undelivered-rate"), 0)
  .option("--seed <seed>", "seed for message sids")
  .option("--json", "machine-readable output")
  .action((opts) => {
    const p = startProvider({
      port: opts.port,
      hostname: opts.host,
      serverUrl: opts.server,
      publicUrl: publicUrlFor(opts.server, opts.publicUrl),
      authToken: opts.token,
      providerNumber: opts.number,
      accountSid: opts.accountSid,
      failRate: opts.failRate,
      undeliveredRate: opts.undeliveredRate,
      seed: resolveSeed(opts.seed),
    });
    const info = { url: p.url, provider_number: opts.number, server: opts.server, public_url: publicUrlFor(opts.server, opts.publicUrl) };
    console.log(opts.json ? JSON.stringify(info) : `provider emulator on ${p.url} (POST /sms, POST|GET /messages) → ${opts.server}`);
    const stop = () => {
      p.stop();
      process.exit(0);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });

provider
  .command("inject")
  .description("deliver one SMS to the server as the provider would (signed callback)")
  .requiredOption("--to <e164>", "a pool number, or PROVIDER_NUMBER for a verification code")
  .requiredOption("--from <e164>", "sender")
  .requiredOption("--body <text>", "text")
  .option("--server <url>", "simhost server", DEFAULT_SERVER)
  .option("--public-url <url>", "the server's PUBLIC_URL (signed in the callback)")
  .option("--token <token>", "PROVIDER_AUTH_TOKEN", DEFAULT_TOKEN)
  .option("--sid <sid>", "MessageSid (repeat one to test idempotency)")
  .option("--json", "machine-readable output")
  .action(async (opts) => {
    const sid = opts.sid ?? `SM${createRandom(resolveSeed(undefined)).hex(32)}`;
    const target = { serverUrl: opts.server, publicUrl: publicUrlFor(opts.server, opts.publicUrl), authToken: opts.token, accountSid: defaultAccountSid };
    const r = await forwardToServer(target, { from: opts.from, to: opts.to, body: opts.body }, sid);
    const ok = r.status >= 200 && r.status < 300;
    if (opts.json) console.log(JSON.stringify({ sid: r.sid, status: r.status, ok }));
    // The server takes every signed callback (an SMS to a number it does not host is dropped): say what is known.
    else if (ok) console.log(`accepted by the server: ${r.sid} (${r.status})`);
    if (!ok) {
      console.error(`the server answered ${r.status || "nothing"}: ${errorMessage(r.body)}`);
      process.exit(1);
    }
  });

program
  .command("device")
  .description("run one simulated Android device")
  .option("--server <url>", "simhost server", DEFAULT_SERVER)
  .option("--provider-url <url>", "a running `device-sim provider`", DEFAULT_PROVIDER_URL)
  .requiredOption("--email <email>", "account to sign in with")
  .requiredOption("--password <password>", "password")
  .option("--totp-secret <base32>", "TOTP secret when the account has 2FA on")
  .option("--state <dir>", "folder for the phone's identity and outbox (survives restarts)")
  .option("--slots <list>", "SIM slots: 1, 2 or 1,2", slots)
  .option("--numbers <list>", "the SIMs' numbers, comma separated (E.164)", numbers)
  .option("--doze", "report doze mode", false)
  .option("--no-listen", "do not open the private-device channel")
  .option(
    "--send-pace <per-minute>",
    "set each account organization's sending policy to this many messages a minute per SIM, without pauses, before sending (default: keep the organization's policy; docs/sending.md)",
    num("send-pace", 1),
  )
  .option("--send-fail-rate <share>", "share of outbound sends (message.send) the radio fails", share("send-fail-rate"), 0)
  .option("--sms-every <duration>", "mean gap between random incoming SMS (e.g. 30s); 0 for none (default: none, or 1s with --sms)", duration)
  .option("--sms <count>", "make this many incoming SMS (scripted ones first, then random ones), then no more", num("sms", 0))
  .option("--script <file>", "JSON array of scripted SMS: { at, from?, body?, sim_slot? }")
  .option("--duration <duration>", "stop after this long (default: until Ctrl-C)", duration)
  .option("--exit-when-idle", "exit once every SMS was made and acknowledged", false)
  .option("--time-scale <factor>", "multiply server-given waits (heartbeat, backoff); more than 0", factor("time-scale"), 1)
  .option("--seed <seed>", "seed: the same seed is the same phone and the same SMS")
  .option("--json", "print the final summary as JSON")
  .action(async (opts) => {
    const script = opts.script ? await loadScript(opts.script) : undefined;
    if (opts.sms > (script?.length ?? 0) && opts.smsEvery === 0) {
      console.error(`error: --sms ${opts.sms} needs random SMS, and --sms-every 0 makes none: leave --sms-every out (1s) or give a gap`);
      process.exit(2);
    }
    const summary = await runDevice({
      serverUrl: opts.server,
      providerUrl: opts.providerUrl,
      credentials: { email: opts.email, password: opts.password, totpSecret: opts.totpSecret },
      seed: resolveSeed(opts.seed),
      stateDir: opts.state,
      slots: opts.slots,
      numbers: opts.numbers,
      doze: opts.doze,
      listen: opts.listen,
      outboundFailRate: opts.sendFailRate,
      smsEveryMs: opts.smsEvery ?? (opts.sms === undefined ? 0 : DEFAULT_SMS_EVERY_MS),
      smsCount: opts.sms,
      script,
      durationMs: opts.duration,
      exitWhenIdle: opts.exitWhenIdle,
      timeScale: opts.timeScale,
      log: (line) => console.error(`${new Date().toISOString()} ${line}`),
    });
    console.log(opts.json ? JSON.stringify(summary) : describeRun(summary));
    process.exit(summary.pending > 0 ? 1 : 0);
  });

program
  .command("fleet")
  .description("run N simulated devices in one process and report what arrived")
  .option("--server <url>", "simhost server", DEFAULT_SERVER)
  .option("--account <email:password[:totp]>", "account the devices belong to (repeat to spread over organizations)", account)
  .option("--email <email>", "single account: email")
  .option("--password <password>", "single account: password")
  .option("--totp-secret <base32>", "single account: TOTP secret")
  .addOption(new Option("--devices <n>", "number of devices").argParser(num("devices", 1)))
  .addOption(new Option("--sms-rate <r>", "incoming SMS per second across the fleet").argParser(num("sms-rate")))
  .addOption(new Option("--doze-ratio <d>", "share of devices in doze mode (0..1)").argParser(share("doze-ratio")))
  .addOption(new Option("--churn <c>", "share of devices dropping off the network per minute (0..1)").argParser(share("churn")))
  .addOption(new Option("--duration <t>", "how long to run (e.g. 60s, 5m)").argParser(duration))
  .option("--seed <seed>", "seed for a repeatable run")
  .option("--scenario <file>", "timed steps (JSON); its options are defaults for the flags")
  .option("--provider-url <url>", "use a running `device-sim provider` instead of an embedded one")
  .option("--provider-token <token>", "PROVIDER_AUTH_TOKEN for the embedded provider", DEFAULT_TOKEN)
  .option("--provider-number <e164>", "PROVIDER_NUMBER", DEFAULT_NUMBER)
  .option("--public-url <url>", "the server's PUBLIC_URL (signed in provider callbacks)")
  .option("--state <dir>", "keep the fleet's outbox on disk")
  .option("--listen", "open a pusher connection per device for message.send and config.changed", false)
  .option("--concurrency <n>", "HTTP requests in flight at most", num("concurrency", 1), 64)
  .option("--time-scale <factor>", "multiply server-given waits (heartbeat, backoff); more than 0", factor("time-scale"), 1)
  .addOption(
    new Option("--settle <duration>", "how long to wait for queued SMS, visibility and outbound statuses at the end (e.g. 30s, 2m)")
      .argParser(duration)
      .default(60_000, "60s"),
  )
  .option("--send-rate <r>", "outbound sends per second through POST /api/messages from the fleet's numbers (needs --listen to be sent)", num("send-rate"), 0)
  .option(
    "--send-pace <per-minute>",
    "set each account organization's sending policy to this many messages a minute per SIM, without pauses, before sending (default: keep the organization's policy; docs/sending.md)",
    num("send-pace", 1),
  )
  .option("--send-fail-rate <share>", "share of outbound sends the phones' radios fail", share("send-fail-rate"), 0)
  .option("--send-expires-in <duration>", "give each outbound send an expires_at this long ahead", duration)
  .option("--json", "print the report as JSON")
  .action(async (opts) => {
    const scenario = opts.scenario ? await loadScenario(opts.scenario) : undefined;
    const so = scenario?.options ?? {};
    const accounts: Credentials[] =
      opts.account ?? (opts.email && opts.password ? [{ email: opts.email, password: opts.password, totpSecret: opts.totpSecret }] : []);
    if (accounts.length === 0) {
      // A usage error (exit 2), as commander's own: nothing was run.
      console.error("error: a fleet needs an account: --email and --password, or --account email:password");
      process.exit(2);
    }
    const tty = process.stderr.isTTY;
    const report = await runFleet({
      serverUrl: opts.server,
      accounts,
      devices: opts.devices ?? so.devices ?? 10,
      smsRate: opts.smsRate ?? so.smsRate ?? 1,
      dozeRatio: opts.dozeRatio ?? so.dozeRatio ?? 0,
      churn: opts.churn ?? so.churn ?? 0,
      durationMs: opts.duration ?? so.durationMs ?? 60_000,
      seed: resolveSeed(opts.seed ?? so.seed),
      scenario,
      providerUrl: opts.providerUrl,
      providerToken: opts.providerToken,
      providerNumber: opts.providerNumber,
      publicUrl: publicUrlFor(opts.server, opts.publicUrl),
      stateDir: opts.state,
      listen: opts.listen,
      concurrency: opts.concurrency,
      timeScale: opts.timeScale,
      settleMs: opts.settle,
      sendRate: opts.sendRate,
      sendFailRate: opts.sendFailRate,
      sendPace: opts.sendPace,
      sendExpiresInMs: opts.sendExpiresIn,
      progress: (line) => process.stderr.write(tty ? `\r\x1b[2K${line}` : `${line}\n`),
    });
    if (tty) process.stderr.write("\n");
    console.log(opts.json ? JSON.stringify(report) : formatReport(report));
    process.exit(report.passed ? 0 : 1);
  });

function errorMessage(body: string) {
  try {
    return (JSON.parse(body) as { message?: string }).message ?? body.slice(0, 200);
  } catch {
    return body.slice(0, 200) || "no answer";
  }
}

/** One device's run for a person (--json prints it whole), its latencies and errors as a fleet's. */
function describeRun(s: Awaited<ReturnType<typeof runDevice>>): string {
  const counts =
    Object.entries(s.counters)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ") || "none";
  return [
    `device ${s.device_id ?? "-"} ${s.state}: ${s.all_sms_made ? "every SMS made" : "not every SMS made"}, ${s.pending} waiting to be accepted`,
    `counts    ${counts}`,
    ...latencyAndErrorLines(s.latency_ms, s.errors),
  ].join("\n");
}

async function loadScript(path: string) {
  const items = (await Bun.file(path).json()) as { at: string | number; from?: string; body?: string; sim_slot?: number }[];
  return items.map(({ at, ...sms }) => ({ ...sms, atMs: parseDuration(at) }));
}

try {
  await program.parseAsync();
} catch (e) {
  const message = e instanceof ApiError || e instanceof ScenarioError ? e.message : (e as Error).message;
  console.error(`device-sim: ${message}`);
  process.exit(1);
}
