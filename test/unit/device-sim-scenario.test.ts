import { describe, expect, test } from "bun:test";
import { parseDuration, parseScenario, runScenario, ScenarioError, type ScenarioStep } from "../../device-sim/scenario";

describe("scenario files", () => {
  test("parses timed steps, sorted by time, with durations in milliseconds", () => {
    const s = parseScenario({
      name: "offline and burst",
      options: { devices: 20, sms_rate: 2, duration: "2m", seed: 9 },
      steps: [
        { at: "60s", action: "burst", sms: 500 },
        { at: 30, action: "offline", percent: 10, for: "45s" },
        { at: "1.5m", action: "revoke", devices: 3 },
        { at: "100s", action: "doze", percent: 25 },
      ],
    });
    expect(s.options).toEqual({ devices: 20, smsRate: 2, dozeRatio: undefined, churn: undefined, durationMs: 120_000, seed: 9 });
    expect(s.steps).toEqual([
      { action: "offline", percent: 10, atMs: 30_000, forMs: 45_000 },
      { action: "burst", sms: 500, atMs: 60_000 },
      { action: "revoke", devices: 3, atMs: 90_000 },
      { action: "doze", percent: 25, atMs: 100_000 },
    ]);
  });

  test("rejects unknown actions, bad fields and bad durations with the path named", () => {
    expect(() => parseScenario({ steps: [{ at: "1s", action: "explode" }] })).toThrow(ScenarioError);
    expect(() => parseScenario({ steps: [{ at: "1s", action: "offline", percent: 150 }] })).toThrow(/\/steps\/0/);
    expect(() => parseScenario({ steps: [{ at: "soon", action: "online" }] })).toThrow(ScenarioError);
    expect(() => parseScenario({ steps: [], extra: true })).toThrow(ScenarioError);
    expect(() => parseDuration("5 minutes")).toThrow(ScenarioError);
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("1h")).toBe(3_600_000);
  });

  test("runs steps at their times and can be cancelled", async () => {
    const s = parseScenario({
      steps: [
        { at: "10ms", action: "wake" },
        { at: "30ms", action: "online" },
        { at: "5s", action: "burst", sms: 1 },
      ],
    });
    const seen: ScenarioStep["action"][] = [];
    const cancel = runScenario(s, (step) => void seen.push(step.action));
    await Bun.sleep(80);
    cancel();
    expect(seen).toEqual(["wake", "online"]);
  });
});
