import { Elysia } from "elysia";
import type { Caller } from "../auth/caller";
import { callerPlugin } from "../auth/plugin";
import { invalidState, validationFailed } from "../errors";
import { requireNumber } from "../numbers/locks";
import { isByosNumber } from "../numbers/store";
import type { Services } from "../services";
import { PolicyBody, PolicyData, PolicyParams } from "./policy-schema";
import { deletePolicy, effectivePolicy, type PolicySource, savePolicy } from "./policy-store";
import { canonicalTimeZone, type SendingPolicy } from "./sending-policy";

const tags = ["Messages"];
const ABOUT = 'Per-SIM pacing of device sends (docs/sending.md "Pacing"): the pacer hands a number\'s sends to its phone no faster than this.';

const hhmm = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`;
const minutesOf = (hm: string) => Number(hm.slice(0, 2)) * 60 + Number(hm.slice(3, 5));

const present = ({ policy: p, source }: { policy: SendingPolicy; source: PolicySource }) => ({
  data: {
    messages_per_minute: p.messagesPerMinute,
    min_delay_seconds: Math.round(p.minDelayMs / 1000),
    max_delay_seconds: Math.round(p.maxDelayMs / 1000),
    daily_cap: p.dailyCap,
    time_zone: p.timeZone,
    quiet_hours: p.quiet ? { start: hhmm(p.quiet.start), end: hhmm(p.quiet.end) } : null,
    source,
  },
});

/** What the schema cannot check: the delay range's order, the time zone, a quiet window of some length. 422 in API.md §1 shape. */
function toPolicy(b: PolicyBody): SendingPolicy {
  const errors: Record<string, string[]> = {};
  if (b.max_delay_seconds < b.min_delay_seconds) errors.max_delay_seconds = ["must be at least min_delay_seconds"];
  const timeZone = canonicalTimeZone(b.time_zone ?? "UTC");
  if (timeZone === null) errors.time_zone = ["must be an IANA time zone such as Europe/Berlin or UTC, or a UTC offset such as +05:30"];
  const quiet = b.quiet_hours ? { start: minutesOf(b.quiet_hours.start), end: minutesOf(b.quiet_hours.end) } : null;
  if (quiet && quiet.start === quiet.end) errors["quiet_hours.end"] = ["must differ from start"];
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return {
    messagesPerMinute: b.messages_per_minute,
    minDelayMs: b.min_delay_seconds * 1000,
    maxDelayMs: b.max_delay_seconds * 1000,
    dailyCap: b.daily_cap,
    quiet,
    timeZone: timeZone!,
  };
}

/**
 * The sending policy (issue 19 item 4): the organization's default and each number's own. Read
 * by members (API keys with numbers.read); set by admins and owners only (no API key permission
 * grants it, as for a number's alias and claims).
 */
export function policyRoutes(services: Pick<Services, "auth" | "sql">) {
  const { sql } = services;
  const ofNumber = async (c: Caller, id: number) => present(await effectivePolicy(sql, c.organization.id, (await requireNumber(sql, c, id)).id));
  const read = { auth: { apiKey: "numbers.read" as const }, response: { 200: PolicyData } };
  const write = { auth: { apiKey: "none" as const, role: "admin" as const }, response: { 200: PolicyData } };

  return new Elysia()
    .use(callerPlugin(services.auth))
    .get("/api/sending-policy", async ({ caller: c }) => present(await effectivePolicy(sql, c.organization.id, null)), {
      ...read,
      detail: { tags, summary: "Your organization's default sending policy", description: ABOUT },
    })
    .put(
      "/api/sending-policy",
      async ({ caller: c, body }) => {
        await savePolicy(sql, c.organization.id, null, toPolicy(body));
        return present(await effectivePolicy(sql, c.organization.id, null));
      },
      { ...write, body: PolicyBody, detail: { tags, summary: "Set your organization's default sending policy", description: ABOUT } },
    )
    .get("/api/numbers/:id/sending-policy", async ({ caller: c, params }) => ofNumber(c, params.id), {
      ...read,
      params: PolicyParams,
      detail: { tags, summary: "The sending policy of one of your numbers", description: `${ABOUT} Its own, else your organization's default.` },
    })
    .put(
      "/api/numbers/:id/sending-policy",
      async ({ caller: c, params, body }) => {
        const sim = await requireNumber(sql, c, params.id);
        // Stored, it would read as in force while nothing applies it.
        if (!isByosNumber(sim))
          throw invalidState("Sending policies pace the sends a phone makes (BYOS numbers); this pool number sends through the provider, which is not paced.");
        await savePolicy(sql, c.organization.id, sim.id, toPolicy(body));
        return ofNumber(c, sim.id);
      },
      { ...write, params: PolicyParams, body: PolicyBody, detail: { tags, summary: "Set a number's own sending policy", description: ABOUT } },
    )
    .delete(
      "/api/numbers/:id/sending-policy",
      async ({ caller: c, params }) => {
        const sim = await requireNumber(sql, c, params.id);
        await deletePolicy(sql, c.organization.id, sim.id);
        return ofNumber(c, sim.id);
      },
      { ...write, params: PolicyParams, detail: { tags, summary: "Remove a number's own sending policy (your default applies again)", description: ABOUT } },
    );
}
