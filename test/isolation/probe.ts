import type { TestContext } from "../helpers";
import { bodySchemaOf, loadOperations as documentOperations } from "../openapi-operations";
import type { Tenant, World } from "./world";

/**
 * Route probing driven by the OpenAPI document: which operations exist, which ids of a tenant
 * fill each path parameter, a body that passes validation, and the scan of a response body for
 * anything of another organization.
 */
export type Operation = {
  method: string;
  path: string;
  params: string[];
  query: string[];
  bodySchema?: { properties?: Record<string, unknown>; required?: string[] };
};

/** The document's API operations, with what the probes need of each. */
export async function loadOperations(ctx: TestContext): Promise<Operation[]> {
  return (await documentOperations(ctx)).map((op) => ({
    method: op.method,
    path: op.path,
    params: (op.path.match(/\{(\w+)\}/g) ?? []).map((p) => p.slice(1, -1)),
    query: (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
    bodySchema: bodySchemaOf(op) as Operation["bodySchema"],
  }));
}

/** The ids of `t` a path parameter can take (several where a tenant has more than one kind). */
export function idsFor(t: Tenant & { messageIds: number[] }, path: string, param: string): (number | string)[] {
  switch (param) {
    case "api_key":
      return Object.values(t.keys).map((k) => k.id);
    case "team":
      return [t.team.id];
    case "user":
      return [t.users.member.id, t.users.owner.id];
    case "device":
      return [t.device.id, t.pendingDevice.id];
    case "simCard":
      return [t.pendingDevice.sim_cards[0]!.id];
    case "message":
      return [t.outboundId];
    case "webhook_integration":
    case "webhook":
      return [t.hook.id];
    case "webhook_mapping":
      return [t.hook.mappingId];
    case "log":
      return [t.hook.logId];
    case "session":
      return t.sessionIds;
    case "id":
      if (path.startsWith("/api/numbers/")) return [t.byosSim.id];
      if (path.startsWith("/api/messages/batches/")) return [t.batchId];
      if (path.startsWith("/api/messages/")) return t.messageIds;
      // The provider's status callback: a tenant's credential is no signature (403 invalid_signature).
      if (path.startsWith("/api/provider/messages/")) return t.messageIds;
  }
  throw new Error(`no ids for {${param}} in ${path}: a new route? teach test/isolation/probe.ts its ids`);
}

/** Paths with the parameters filled: every parameter from `fill`, and for nested routes the parent from `own` with the rest from `fill`. */
export function pathsFor(op: Operation, fill: (param: string) => (number | string)[], own: (param: string) => (number | string)[]): string[] {
  const combos = (choose: (param: string, i: number) => (number | string)[]) =>
    op.params.reduce<string[]>((acc, param, i) => acc.flatMap((p) => choose(param, i).map((id) => p.replace(`{${param}}`, String(id)))), [op.path]);
  const out = combos((param) => fill(param));
  if (op.params.length > 1) out.push(...combos((param, i) => (i === 0 ? own(param).slice(0, 1) : fill(param))));
  return out;
}

// Bodies that pass validation, so a probe reaches the ownership check (a 422 would prove nothing).
const BODIES: Record<string, (caller: Tenant) => unknown> = {
  "PATCH /api/api-keys/{api_key}": () => ({ name: "renamed", permissions: [] }),
  "PATCH /api/teams/{team}": () => ({ name: "renamed" }),
  "POST /api/teams/{team}/members": (c) => ({ user_id: c.users.member.id }),
  "POST /api/numbers/{id}/lock": () => ({}),
  "PATCH /api/numbers/{id}/alias": () => ({ alias: "renamed" }),
  "PUT /api/numbers/{id}/sending-policy": () => ({ messages_per_minute: 1, min_delay_seconds: 0, max_delay_seconds: 0, daily_cap: 1 }),
  "POST /api/byos/devices/{device}/messages/{message}/status": () => ({ status: "failed", error: "probe" }),
  "PATCH /api/byos/devices/{device}": () => ({ device_name: "renamed" }),
  "POST /api/byos/devices/{device}/sims": () => ({ sim_slot: 2 }),
  "PATCH /api/byos/devices/{device}/sims/{simCard}": () => ({ sim_slot: 2 }),
  "POST /api/byos/devices/{device}/heartbeat": () => ({ battery_level: 50, signal_strength: 3, is_in_doze_mode: false }),
  "POST /api/byos/devices/{device}/sms": () => ({ from: "+15550001111", body: "probe", message_id: crypto.randomUUID(), sim_slot: 1 }),
  "PATCH /api/webhook-integrations/{webhook_integration}": () => ({ name: "renamed", url: "https://example.com/renamed", event_types: ["device.online"] }),
  "POST /api/webhook-integrations/{webhook_integration}/replay": () => replayWindow(),
  "POST /api/teams/{team}/webhooks/{webhook}/replay": () => replayWindow(),
  "POST /api/webhook-integrations/{webhook_integration}/mappings": (c) => ({ team_id: c.team.id, forwarding_mode: "always" }),
  "PATCH /api/webhook-integrations/{webhook_integration}/mappings/{webhook_mapping}": () => ({ forwarding_mode: "always" }),
  "POST /api/teams/{team}/webhooks": () => ({ name: "probe", url: "https://example.com/probe" }),
  "PATCH /api/teams/{team}/webhooks/{webhook}": () => ({ name: "renamed", url: "https://example.com/renamed", event_types: ["device.online"] }),
};

/** A valid replay window: the last day. */
function replayWindow() {
  return { since: new Date(Date.now() - 86_400_000).toISOString(), until: new Date().toISOString() };
}

export function bodyFor(op: Operation, caller: Tenant): unknown {
  if (op.method === "GET" || op.method === "DELETE") return undefined;
  const make = BODIES[`${op.method} ${op.path}`];
  return make ? make(caller) : op.bodySchema ? {} : undefined;
}

/** What a response of `viewer` may not contain: every secret string of the other tenants and their organization ids. */
export function foreignFindings(text: string, body: unknown, others: { strings: string[]; orgIds: number[] }): string[] {
  const found = others.strings.filter((s) => s && text.includes(s)).map((s) => `text ${JSON.stringify(s)}`);
  const walk = (v: unknown, key: string) => {
    if (Array.isArray(v)) for (const x of v) walk(x, key);
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, k);
    else if (key === "organization_id" && typeof v === "number" && others.orgIds.includes(v)) found.push(`organization_id ${v}`);
  };
  walk(body, "");
  return found;
}

export const pairOf = (w: World) =>
  [
    [w.a, w.b],
    [w.b, w.a],
  ] as const;

/** Runs `fn` over `items` with at most `limit` at a time (the probes are independent reads and refused writes). */
export async function forEachLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}
