import { Webhook } from "standardwebhooks";
import type { Sql } from "../../server/db/client";
import { isAfter } from "../../server/events/cursor";
import { storeInboundMessage } from "../../server/messages/inbound";
import type { TestContext } from "../helpers";

/** Test data for webhook tests, written straight to the database. */
export async function createTeam(sql: Sql, orgId: number, name = `team-${crypto.randomUUID().slice(0, 6)}`) {
  const [team] = await sql<{ id: number; name: string }[]>`insert into teams (organization_id, name) values (${orgId}, ${name}) returning id, name`;
  return team!;
}

/** A pool number attached to organizations, each with its team (or none). */
export async function createNumber(sql: Sql, attachments: { orgId: number; teamId?: number | null; alias?: string }[]) {
  const number = `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
  const [sim] = await sql<{ id: number; number: string }[]>`
    insert into hosted_sims (number, provider, type, shared_max_orgs) values (${number}, 'test', 'shared', 5) returning id, number`;
  for (const a of attachments) {
    await sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id, team_id, alias) values (${sim!.id}, ${a.orgId}, ${a.teamId ?? null}, ${a.alias ?? null})`;
  }
  return sim!;
}

export async function lockNumber(sql: Sql, simId: number, orgId: number, teamId: number | null) {
  await sql`update hosted_sims set lock_organization_id = ${orgId}, lock_team_id = ${teamId}, locked_until = now() + interval '10 minutes' where id = ${simId}`;
}

/** An inbound SMS through the one entry point, then a nudge to the event log's readers (as the server's callers do). */
export async function receiveSms(ctx: TestContext, simId: number, text = `hello ${crypto.randomUUID().slice(0, 8)}`) {
  const stored = await ctx.sql.begin((tx) =>
    storeInboundMessage(tx, { hostedSimId: simId, from: "+15550001111", text, source: "provider", receivedAt: new Date() }),
  );
  ctx.services.events.notify();
  return stored!;
}

export type Received = { at: number; path: string; body: string; event: any; headers: Record<string, string>; verifiedWith: string | null };

/**
 * A real HTTP receiver on a free local port. Every request is checked with the standardwebhooks
 * library against the secrets the test gave it; `verifiedWith` says which one verified.
 */
export function startReceiver(respond: (n: number, req: Request) => Response | Promise<Response> = () => new Response("ok")) {
  const received: Received[] = [];
  const secrets: string[] = [];
  let count = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      const headers = Object.fromEntries(req.headers);
      let verifiedWith: string | null = null;
      for (const s of secrets) {
        try {
          new Webhook(s).verify(body, headers);
          verifiedWith = s;
          break;
        } catch {}
      }
      const url = new URL(req.url);
      received.push({ at: performance.now(), path: url.pathname + url.search, body, event: JSON.parse(body), headers, verifiedWith });
      return respond(++count, req);
    },
  });
  return { url: `http://127.0.0.1:${server.port}/hook`, received, secrets, stop: () => server.stop(true) };
}

/** Polls until `check` returns a truthy value or the deadline passes. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what = "condition"): Promise<Exclude<T, false | null | undefined | 0 | "">> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Exclude<T, false | null | undefined | 0 | "">;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/**
 * Waits until any inbound fan-out job left by an earlier version has run and this instance's webhook consumer has read the whole
 * log and recorded every delivery of it (first attempts made, or handed to the job queue): every
 * delivery of the messages received so far exists.
 */
export async function deliveriesMade(ctx: TestContext) {
  await waitFor(
    async () => {
      const [r] = await ctx.sql<{ fanout: number; txid: string | null; id: number | null }[]>`
        select (select count(*) from jobs where queue = 'message.inbound' and not dead)::int as fanout, e.txid::text as txid, e.id
        from (select 1) one left join lateral (select txid, id from events order by txid desc, id desc limit 1) e on true`;
      if (r!.fanout > 0) return false;
      if (r!.txid === null) return true;
      const progress = ctx.services.webhooks.progress();
      return progress !== undefined && !isAfter({ txid: r!.txid, id: r!.id! }, progress.settled);
    },
    10_000,
    "webhook deliveries made from the event log",
  );
}

export type MadeDelivery = { webhook_integration_id: number; event_id: string; event_type: string; message_id: number | null };

/**
 * The deliveries made of log events, one per (event, integration): attempted (a first attempt
 * that succeeded is its log record alone) or stored for the job path (a delivery row). Narrowed
 * to some integrations or to one message.
 */
export async function madeDeliveries(sql: Sql, where: { integrationIds?: number[]; messageId?: number }): Promise<MadeDelivery[]> {
  const filter = sql`
    ${where.integrationIds ? sql`and webhook_integration_id = any(${where.integrationIds}::bigint[])` : sql``}
    ${where.messageId === undefined ? sql`` : sql`and message_id = ${where.messageId}`}`;
  const rows = await sql<MadeDelivery[]>`
    select webhook_integration_id, event_id, event_type, message_id from webhook_delivery_logs where event_type <> 'webhook.test' ${filter}
    union
    select webhook_integration_id, event_id, event_type, message_id from webhook_deliveries where true ${filter}
    order by webhook_integration_id, event_id`;
  return [...rows];
}

/** Makes every waiting retry of an integration due now, instead of waiting out its backoff. */
export async function fastForwardRetries(ctx: TestContext, integrationId: number) {
  await ctx.sql`
    update jobs set run_at = now() where queue = 'webhook.delivery'
      and (payload->>'delivery_id')::bigint in (select id from webhook_deliveries where webhook_integration_id = ${integrationId})`;
  ctx.services.jobs.wake();
}

/** A local SMTP server that keeps every mail it is given (alerts of disabled integrations). */
export async function startSmtp() {
  const { SMTPServer } = await import("smtp-server");
  const mails: { to: string[]; data: string }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    onData(stream, session, done) {
      let data = "";
      stream.on("data", (chunk: Buffer) => (data += chunk.toString()));
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), data });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as { port: number }).port;
  return { url: `smtp://127.0.0.1:${port}`, mails, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Creates an integration through the API and maps it to teams; returns its id and secret. */
export async function createHook(
  ctx: TestContext,
  token: string,
  body: Record<string, unknown>,
  mappings: { teamId: number; mode: "always" | "lock_required"; active?: boolean }[] = [],
) {
  const res = await ctx.request("POST", "/api/webhook-integrations", { token, body: { name: "hook", ...body } });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  const { id, secret } = res.body.data as { id: number; secret: string };
  for (const m of mappings) {
    const made = await ctx.request("POST", `/api/webhook-integrations/${id}/mappings`, { token, body: { team_id: m.teamId, forwarding_mode: m.mode } });
    if (made.status !== 201) throw new Error(`mapping failed: ${made.status} ${made.text}`);
    if (m.active === false) {
      await ctx.request("PATCH", `/api/webhook-integrations/${id}/mappings/${made.body.data.id}`, {
        token,
        body: { forwarding_mode: m.mode, is_active: false },
      });
    }
  }
  return { id, secret };
}

export async function logsOf(ctx: TestContext, token: string, integrationId: number, query = "") {
  const res = await ctx.request("GET", `/api/webhook-integrations/${integrationId}/logs${query}`, { token });
  if (res.status !== 200) throw new Error(`logs failed: ${res.status} ${res.text}`);
  return res.body as { data: any[]; meta: any; links: any };
}
