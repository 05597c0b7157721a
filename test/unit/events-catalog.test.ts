import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { generatedFiles } from "../../.ci/events-docs";
import { CATALOG, EVENT_TYPES, realtimeOf } from "../../server/events/catalog";
import { catalogMarkdown } from "../../server/events/catalog-doc";

const root = new URL("../../", import.meta.url).pathname;

describe("the event catalog", () => {
  test("every file generated from the catalog is current: docs/events.md, console/webhook-event-types.ts (`bun run events:docs`)", async () => {
    for (const { path, text } of generatedFiles()) expect(await Bun.file(path).text()).toBe(text);
  });

  test("docs/events.md holds the catalog's current table (regenerate with `bun run events:docs`)", async () => {
    const doc = await Bun.file(`${root}docs/events.md`).text();
    expect(doc).toContain(catalogMarkdown());
    for (const type of EVENT_TYPES) expect(doc).toContain(`| \`${type}\` |`);
  });

  test("every type has a payload schema; realtime names and channels follow from the row", () => {
    for (const type of EVENT_TYPES) expect(CATALOG[type].payload).toBeDefined();
    const row = { organizationId: 3, teamId: null, hostedSimId: 5, deviceId: null };
    expect(realtimeOf({ ...row, type: "message.received" })).toEqual({ name: "message.received", channels: ["private-organization.3", "private-number.5"] });
    expect(realtimeOf({ ...row, type: "message.received", teamId: 9 })?.channels).toEqual(["private-organization.3", "private-team.9", "private-number.5"]);
    expect(realtimeOf({ ...row, type: "message.delivered" })).toEqual({
      name: "message.status_changed",
      channels: ["private-organization.3", "private-number.5"],
    });
    expect(realtimeOf({ ...row, type: "device.offline", deviceId: 7 })).toEqual({
      name: "device.status_changed",
      channels: ["private-device.7", "private-organization.3"],
    });
    expect(realtimeOf({ ...row, type: "device.disabled", deviceId: 7 })?.name).toBe("device.updated");
    expect(realtimeOf({ ...row, type: "config.changed", deviceId: 7 })).toEqual({ name: "config.changed", channels: ["private-device.7"] });
    expect(realtimeOf({ ...row, type: "number.unlocked" })).toEqual({ name: "number.unlocked", channels: ["private-number.5", "private-organization.3"] });
    expect(realtimeOf({ ...row, type: "webhook.test" })).toBeNull();
  });

  test("no event name or channel string is written in the server outside the catalog", async () => {
    const names = [...new Set(EVENT_TYPES.flatMap((t) => [t, CATALOG[t].realtime ?? t]))];
    const literal = new RegExp(`["'\`](${names.map((n) => n.replace(".", "\\.")).join("|")})["'\`]|private-(organization|team|number|device)\\.\\$\\{`);
    const offenders: string[] = [];
    for await (const file of new Glob("server/**/*.ts").scan(root)) {
      if (file.startsWith("server/events/")) continue;
      const text = await Bun.file(`${root}${file}`).text();
      text.split("\n").forEach((line, i) => {
        // Code, not comments (which may name events in backquotes).
        const code = line.trim();
        if (code.startsWith("*") || code.startsWith("/*") || code.startsWith("//")) return;
        if (literal.test(code.replace(/\s\/\/ .*$/, ""))) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  test("no server file outside server/events/ writes the events table (writers use appendEvents or the appendEventsFrom fragment)", async () => {
    const writers: string[] = [];
    for await (const file of new Glob("server/**/*.ts").scan(root)) {
      if (/\b(insert\s+into|update|delete\s+from)\s+events\b/i.test(await Bun.file(`${root}${file}`).text())) writers.push(file);
    }
    expect(writers.filter((f) => !f.startsWith("server/events/"))).toEqual([]);
    expect(writers).toContain("server/events/log.ts");
  });
});
