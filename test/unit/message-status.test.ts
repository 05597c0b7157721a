import { describe, expect, test } from "bun:test";
import { providerBackoff } from "../../server/messages/outbound-jobs";
import { canMove, judgeReport, statesBefore } from "../../server/messages/status";

describe("outbound status moves", () => {
  test("only forward: queued → sending → sent → delivered, failed from any unfinished state", () => {
    expect(canMove("queued", "sending")).toBe(true);
    expect(canMove("queued", "delivered")).toBe(true);
    expect(canMove("sending", "sent")).toBe(true);
    expect(canMove("sent", "delivered")).toBe(true);
    for (const from of ["queued", "sending", "sent"]) expect(canMove(from, "failed")).toBe(true);
    expect(canMove("sent", "sending")).toBe(false);
    expect(canMove("delivered", "failed")).toBe(false);
    expect(canMove("failed", "sent")).toBe(false);
    expect(canMove("received", "sent")).toBe(false);
  });

  test("statesBefore lists exactly the states a conditional update may start from", () => {
    expect(statesBefore("sent").sort()).toEqual(["queued", "sending"]);
    expect(statesBefore("failed").sort()).toEqual(["queued", "sending", "sent"]);
    expect(statesBefore("queued")).toEqual(["scheduled"]);
    expect(statesBefore("cancelled").sort()).toEqual(["queued", "scheduled"]);
    expect(statesBefore("expired").sort()).toEqual(["queued", "scheduled", "sending"]);
  });

  test("scheduled, cancelled and expired (issue 19): only unsent messages end cancelled or expired; final states stay", () => {
    expect(canMove("scheduled", "queued")).toBe(true);
    expect(canMove("scheduled", "sending")).toBe(false);
    expect(canMove("scheduled", "failed")).toBe(false);
    expect(canMove("sending", "cancelled")).toBe(false);
    expect(canMove("sent", "expired")).toBe(false);
    for (const final of ["cancelled", "expired", "delivered", "failed"])
      for (const to of ["queued", "sending", "sent", "delivered", "failed", "cancelled", "expired"]) expect(canMove(final, to)).toBe(false);
  });
});

describe("provider retry backoff", () => {
  test("doubles from the first delay with ±20 % jitter, capped at 10 minutes", () => {
    const backoff = providerBackoff(5);
    for (let attempt = 1; attempt <= 4; attempt++) {
      const base = 5_000 * 2 ** (attempt - 1);
      const d = backoff(attempt);
      expect(d).toBeGreaterThanOrEqual(base * 0.8);
      expect(d).toBeLessThanOrEqual(base * 1.2);
    }
    expect(backoff(30)).toBeLessThanOrEqual(600_000 * 1.2);
  });
});

describe("delivery reports (judgeReport): a status never moves backwards", () => {
  test("the next step moves; a repeat or a step already passed is stale; one against a final state conflicts", () => {
    expect(judgeReport("queued", "sending")).toBe("move");
    expect(judgeReport("sending", "delivered")).toBe("move");
    expect(judgeReport("sent", "failed")).toBe("move");
    for (const [current, reported] of [
      ["sent", "sent"],
      ["delivered", "sent"],
      ["delivered", "sending"],
      ["sent", "sending"],
      ["failed", "failed"],
    ])
      expect([current, reported, judgeReport(current!, reported!)]).toEqual([current, reported, "stale"]);
    for (const [current, reported] of [
      ["failed", "sent"],
      ["expired", "delivered"],
      ["cancelled", "sending"],
      ["delivered", "failed"],
    ])
      expect([current, reported, judgeReport(current!, reported!)]).toEqual([current, reported, "conflict"]);
  });
});
