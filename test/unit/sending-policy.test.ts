import { describe, expect, test } from "bun:test";
import { afterSend, canonicalTimeZone, DEFAULT_POLICY, formatLocalTime, localTime, nextSlot, type SendingPolicy } from "../../server/messages/sending-policy";

const at = (iso: string) => Date.parse(iso);
const berlin: SendingPolicy = {
  messagesPerMinute: 10,
  minDelayMs: 0,
  maxDelayMs: 0,
  dailyCap: 3,
  quiet: { start: 22 * 60, end: 7 * 60 },
  timeZone: "Europe/Berlin",
};
const fresh = { nextAllowedAt: null, day: null, dayCount: 0 };

describe("the pacing rule (sending-policy.ts)", () => {
  test("a free SIM sends now; after a send the next waits 60 s / per minute, or the random pause when longer", () => {
    const now = at("2027-03-02T12:00:00Z");
    expect(nextSlot(berlin, fresh, now)).toBe(now);
    const s = afterSend(berlin, fresh, now);
    expect(s).toEqual({ nextAllowedAt: now + 6_000, day: "2027-03-02", dayCount: 1 });
    expect(nextSlot(berlin, s, now + 1_000)).toBe(now + 6_000);
    const slow = { ...berlin, minDelayMs: 8_000, maxDelayMs: 20_000 };
    expect(afterSend(slow, fresh, now, () => 0).nextAllowedAt).toBe(now + 8_000);
    expect(afterSend(slow, fresh, now, () => 0.9999999).nextAllowedAt).toBe(now + 20_000);
  });

  test("quiet hours overnight in the policy's zone: a slot at 23:00 local waits for 07:00 local", () => {
    // 22:00 UTC is 23:00 in Berlin (CET, UTC+1).
    expect(nextSlot(berlin, fresh, at("2027-03-02T22:00:00Z"))).toBe(at("2027-03-03T06:00:00Z"));
    // 06:59:30 local is still quiet; 07:00 local is not.
    expect(nextSlot(berlin, fresh, at("2027-03-03T05:59:30Z"))).toBe(at("2027-03-03T06:00:00Z"));
    expect(nextSlot(berlin, fresh, at("2027-03-03T06:00:00Z"))).toBe(at("2027-03-03T06:00:00Z"));
  });

  test("the daily cap holds until the next local day, whose start may itself be quiet", () => {
    const full = { nextAllowedAt: at("2027-03-02T12:00:06Z"), day: "2027-03-02", dayCount: 3 };
    expect(nextSlot(berlin, full, at("2027-03-02T12:00:10Z"))).toBe(at("2027-03-03T06:00:00Z"));
    const noQuiet = { ...berlin, quiet: null };
    expect(nextSlot(noQuiet, full, at("2027-03-02T12:00:10Z"))).toBe(at("2027-03-02T23:00:00Z"));
    // A count of another day does not hold.
    expect(nextSlot(noQuiet, { ...full, day: "2027-03-01" }, at("2027-03-02T12:00:10Z"))).toBe(at("2027-03-02T12:00:10Z"));
  });

  test("across a daylight-saving change the local day and the window follow the zone", () => {
    // 2027-03-28 02:00 CET → 03:00 CEST: 05:30 UTC is 07:30 local (quiet until 07:00 is over).
    expect(localTime(at("2027-03-28T05:30:00Z"), "Europe/Berlin")).toEqual({ day: "2027-03-28", msOfDay: 7.5 * 3_600_000 });
    expect(nextSlot(berlin, fresh, at("2027-03-28T05:30:00Z"))).toBe(at("2027-03-28T05:30:00Z"));
    // At 04:00 UTC (06:00 CEST) the window opens at 07:00 CEST = 05:00 UTC.
    expect(nextSlot(berlin, fresh, at("2027-03-28T04:00:00Z"))).toBe(at("2027-03-28T05:00:00Z"));
  });

  test("a jump across the spring change lands on the local minute aimed at, not an hour late", () => {
    // 2026-03-08 in New York: 02:00 EST → 03:00 EDT (07:00 UTC).
    const ny = { ...berlin, timeZone: "America/New_York", dailyCap: 1000 };
    // Quiet 01:00-03:00, now 01:30 EST (06:30 UTC): it ends at 03:00 EDT = 07:00 UTC (was 04:00 EDT).
    expect(nextSlot({ ...ny, quiet: { start: 60, end: 180 } }, fresh, at("2026-03-08T06:30:00Z"))).toBe(at("2026-03-08T07:00:00Z"));
    // The cap reached at 00:30 EST on the 8th (a 23-hour day): the next day starts at 00:00 EDT on the 9th = 04:00 UTC.
    const full = { nextAllowedAt: null, day: "2026-03-08", dayCount: 1 };
    expect(nextSlot({ ...ny, dailyCap: 1, quiet: null }, full, at("2026-03-08T05:30:00Z"))).toBe(at("2026-03-09T04:00:00Z"));
    // Quiet 23:00-08:00 with the cap reached at 00:30 EST: 08:00 EDT on the 8th = 12:00 UTC (was 09:00 EDT).
    expect(nextSlot({ ...ny, quiet: { start: 23 * 60, end: 8 * 60 } }, fresh, at("2026-03-08T05:30:00Z"))).toBe(at("2026-03-08T12:00:00Z"));
    // A window ending in the skipped hour (02:30) opens when the hour does not exist any more: 03:00 EDT.
    expect(nextSlot({ ...ny, quiet: { start: 60, end: 150 } }, fresh, at("2026-03-08T06:30:00Z"))).toBe(at("2026-03-08T07:00:00Z"));
    // Autumn (a 25-hour day, 2026-11-01 02:00 EDT → 01:00 EST): quiet 00:00-06:00 from 00:30 EDT ends at 06:00 EST = 11:00 UTC.
    expect(nextSlot({ ...ny, quiet: { start: 0, end: 360 } }, fresh, at("2026-11-01T04:30:00Z"))).toBe(at("2026-11-01T11:00:00Z"));
  });

  test("every instant of a minute has the local time formatting it gives, in zones of odd offsets and across their changes", () => {
    // localTime reuses a zone's last minute; formatLocalTime formats each instant afresh.
    const reference = formatLocalTime;
    // Daylight saving by an hour (Berlin, spring and autumn), by half an hour (Lord Howe), at -3:30
    // (St John's); local midnights at +5:45 (Kathmandu) and in UTC.
    const changes: [string, string][] = [
      ["Europe/Berlin", "2027-03-28T01:00:00Z"],
      ["Europe/Berlin", "2027-10-31T01:00:00Z"],
      ["Australia/Lord_Howe", "2027-04-03T15:00:00Z"],
      ["Australia/Lord_Howe", "2027-10-02T15:30:00Z"],
      ["America/St_Johns", "2027-03-14T05:30:00Z"],
      ["Asia/Kathmandu", "2027-06-01T18:15:00Z"],
      ["UTC", "2027-01-01T00:00:00Z"],
    ];
    for (const [zone, iso] of changes) {
      const change = at(iso);
      expect(reference(change - 1, zone)).not.toEqual(reference(change, zone));
      // Through the minutes either side of the change in order (the pacer's case), then back and forth.
      for (let ms = change - 180_000; ms <= change + 180_000; ms += 7_919) expect(localTime(ms, zone)).toEqual(reference(ms, zone));
      for (const ms of [change - 1, change, change + 59_999, change - 60_000, change + 1, change - 1]) expect(localTime(ms, zone)).toEqual(reference(ms, zone));
    }
  });

  test("time zones are IANA names; the defaults are 6 a minute, 8 to 20 s apart, 200 a day, no quiet hours", () => {
    expect(canonicalTimeZone("America/New_York")).toBe("America/New_York");
    expect(canonicalTimeZone("UTC")).toBe("UTC");
    // Any letter case is the zone, spelled as the runtime spells it.
    expect(canonicalTimeZone("america/argentina/COMODRIVADAVIA")).toBe("America/Argentina/ComodRivadavia");
    expect(canonicalTimeZone("utc")).toBe("UTC");
    expect(canonicalTimeZone("Mars/Olympus")).toBeNull();
    expect(DEFAULT_POLICY).toEqual({ messagesPerMinute: 6, minDelayMs: 8_000, maxDelayMs: 20_000, dailyCap: 200, quiet: null, timeZone: "UTC" });
  });
});
