import { appendEvents, type NewEvent } from "../../server/events/log";
import type { TestContext } from "../helpers";
import type { Tenant, World } from "./world";

/**
 * Events in the log for both organizations of the world, of every family, carrying each
 * organization's secrets (texts, names, number, alias), on the shared number and on each one's
 * device: what publishers append for them (issue 16). Until every publisher writes to the log,
 * the suite appends them itself, in one transaction as a change does.
 */
export function tenantEvents(t: Tenant, w: World, n: number): NewEvent[] {
  const sim = { id: w.shared.id, number: w.shared.number, alias: `Shared ${t.tag}` };
  const team = { id: t.team.id, name: t.team.name };
  const message = { id: 1_000_000 + n, hosted_sim_id: w.shared.id, text: t.privateTexts[0], team_id: t.team.id };
  return [
    { organizationId: t.org.id, type: "message.received", hostedSimId: w.shared.id, teamId: t.team.id, payload: { message, hosted_sim: sim, team } },
    { organizationId: t.org.id, type: "number.locked", hostedSimId: w.shared.id, payload: { hosted_sim: sim, lock: { organization_id: t.org.id, team } } },
    {
      organizationId: t.org.id,
      type: "device.online",
      deviceId: t.device.id,
      payload: { device_id: t.device.id, organization_id: t.org.id, status: "active", is_online: true, name: `Device ${t.tag}` },
    },
    { organizationId: t.org.id, type: "webhook.test", payload: { integration: `Hook ${t.tag}`, n } },
  ];
}

/** Appends both organizations' events, interleaved, and notifies every instance. */
export async function seedEvents(ctx: TestContext, w: World, n = 0): Promise<void> {
  await ctx.sql.begin((tx) => appendEvents(tx, [...tenantEvents(w.a, w, n), ...tenantEvents(w.b, w, n)]));
  ctx.services.events.notify();
}
