import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

/** "500ms", "30s", "5m", "1h" or a plain number of seconds. */
const Duration = Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: "^\\d+(\\.\\d+)?(ms|s|m|h)?$" })]);
const Percent = Type.Number({ minimum: 0, maximum: 100 });

const Step = Type.Union([
  // Take a share of the fleet off the network (phone off, no signal); back after `for`, else at "online".
  Type.Object({ at: Duration, action: Type.Literal("offline"), percent: Percent, for: Type.Optional(Duration) }, { additionalProperties: false }),
  Type.Object({ at: Duration, action: Type.Literal("online") }, { additionalProperties: false }),
  // SMS arriving at once, spread over the online devices.
  Type.Object({ at: Duration, action: Type.Literal("burst"), sms: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  // Revoked through the API by the device's owner; the device keeps trying and must be refused.
  Type.Object({ at: Duration, action: Type.Literal("revoke"), devices: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  Type.Object({ at: Duration, action: Type.Literal("doze"), percent: Percent }, { additionalProperties: false }),
  Type.Object({ at: Duration, action: Type.Literal("wake") }, { additionalProperties: false }),
]);

const ScenarioFile = Type.Object(
  {
    name: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    // Fleet options for a repeatable run; command-line flags still win.
    options: Type.Optional(
      Type.Object(
        {
          devices: Type.Optional(Type.Integer({ minimum: 1 })),
          sms_rate: Type.Optional(Type.Number({ minimum: 0 })),
          doze_ratio: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
          churn: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
          duration: Type.Optional(Duration),
          seed: Type.Optional(Type.Integer({ minimum: 0 })),
        },
        { additionalProperties: false },
      ),
    ),
    steps: Type.Array(Step),
  },
  { additionalProperties: false },
);
type ScenarioFile = Static<typeof ScenarioFile>;

/** A step with its times in milliseconds, ready to schedule. */
export type ScenarioStep = { atMs: number } & (
  | { action: "offline"; percent: number; forMs?: number }
  | { action: "online" }
  | { action: "burst"; sms: number }
  | { action: "revoke"; devices: number }
  | { action: "doze"; percent: number }
  | { action: "wake" }
);

export type Scenario = {
  name?: string;
  options: { devices?: number; smsRate?: number; dozeRatio?: number; churn?: number; durationMs?: number; seed?: number };
  steps: ScenarioStep[];
};

export class ScenarioError extends Error {}

export function parseDuration(value: number | string): number {
  if (typeof value === "number") return value * 1000;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!m) throw new ScenarioError(`not a duration: ${JSON.stringify(value)} (use 500ms, 30s, 5m, 1h or seconds)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
  return Number(m[1]) * unit;
}

/** Validates a scenario document; errors name the offending path so a QA file is quick to fix. */
export function parseScenario(json: unknown): Scenario {
  if (!Value.Check(ScenarioFile, json)) {
    const first = Value.Errors(ScenarioFile, json).First();
    throw new ScenarioError(`invalid scenario at ${first?.path || "/"}: ${first?.message ?? "unknown error"}`);
  }
  const file = json as ScenarioFile;
  const o = file.options ?? {};
  const steps = file.steps
    .map((s): ScenarioStep => {
      const { at, ...rest } = s;
      const atMs = parseDuration(at);
      if (rest.action !== "offline") return { ...rest, atMs };
      const { for: spell, ...offline } = rest;
      return { ...offline, atMs, ...(spell === undefined ? {} : { forMs: parseDuration(spell) }) };
    })
    .sort((a, b) => a.atMs - b.atMs);
  return {
    name: file.name,
    options: {
      devices: o.devices,
      smsRate: o.sms_rate,
      dozeRatio: o.doze_ratio,
      churn: o.churn,
      durationMs: o.duration === undefined ? undefined : parseDuration(o.duration),
      seed: o.seed,
    },
    steps,
  };
}

export async function loadScenario(path: string): Promise<Scenario> {
  let json: unknown;
  try {
    json = await Bun.file(path).json();
  } catch (e) {
    throw new ScenarioError(`cannot read scenario ${path}: ${(e as Error).message}`);
  }
  return parseScenario(json);
}

/** Runs each step at its time from now; returns a function that cancels the steps not yet run. */
export function runScenario(scenario: Scenario, perform: (step: ScenarioStep) => void | Promise<void>): () => void {
  const timers = scenario.steps.map((step) => setTimeout(() => void perform(step), step.atMs));
  return () => timers.forEach(clearTimeout);
}
