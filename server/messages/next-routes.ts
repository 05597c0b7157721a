import { Elysia } from "elysia";
import { callerPlugin, type RouteRule } from "../auth/plugin";
import { notFound } from "../errors";
import { holdOpen } from "../lib/versions";
import { answerRevokedWait, refusedError, shuttingDown } from "../lib/waiters";
import { findHostedSim } from "../numbers/store";
import type { Services } from "../services";
import { findNextMessage, type WaitStart } from "./history-store";
import { NextMessageData, NextParams, NextQuery } from "./schema";
import { lastMessageId } from "./store";

const DEFAULT_TIMEOUT_SECONDS = 30;
const RULE: RouteRule = { apiKey: "messages.read" };

/** The query's `after` was checked by its schema (schema.ts `isWaitStart`): digits are an id. */
const startAfter = (after: string): WaitStart => (/^\d+$/.test(after) ? { afterId: Number(after) } : { afterTime: new Date(after) });

/** `GET /api/numbers/{id}/messages/next`: wait for the next message on a number (issue 17, docs/api-notes.md "Waiting for a message"). */
export function nextMessageRoutes(services: Pick<Services, "auth" | "sql" | "waiters">) {
  const { sql, waiters } = services;

  return new Elysia().use(callerPlugin(services.auth)).get(
    "/api/numbers/:id/messages/next",
    async ({ caller: c, params, query, request, server }) => {
      // The call's start, read before the waiter registers: anything stored later has a higher id.
      const start = query.after === undefined ? { afterId: await lastMessageId(sql) } : startAfter(query.after);
      const sim = await findHostedSim(sql, c.readScope, params.id);
      if (!sim) throw notFound("Number");
      const viewers = c.readScope.filter((o) => sim.attachments.some((a) => a.organization_id === o));
      const timeout = query.timeout ?? DEFAULT_TIMEOUT_SECONDS;
      // Bun closes a connection idle for `idleTimeout` (Elysia: 30 s); this one is quiet on purpose.
      holdOpen(server, request, timeout + 10);
      const filter = { from: query.from, q: query.contains, hasCode: query.has_code === undefined ? undefined : query.has_code === "true" };
      const outcome = await waiters.wait(
        { hostedSimId: sim.id, viewers, quotaOrganization: c.organization.id, caller: c, timeoutMs: timeout * 1000, signal: request.signal },
        (among) => findNextMessage(sql, { viewers, hostedSimId: sim.id, start, filter, among }),
      );
      if ("refused" in outcome) throw refusedError(outcome.refused, waiters.limits);
      if ("found" in outcome) return { data: outcome.found };
      if (outcome.ended === "shutdown") throw shuttingDown();
      if (outcome.ended === "revoked") {
        // The caller as it stands now: a number it no longer sees is 404, as on its next call.
        const now = await answerRevokedWait(services.auth, request, RULE);
        if (!(await findHostedSim(sql, now.readScope, params.id))) throw notFound("Number");
      }
      return { data: null };
    },
    {
      auth: RULE,
      params: NextParams,
      query: NextQuery,
      response: { 200: NextMessageData },
      detail: {
        tags: ["Messages"],
        summary: "Wait for the next message on a number",
        description:
          'Answers the first inbound message after `after` that matches the filters, as soon as it is stored, or `{ "data": null }` when `timeout` seconds pass first. Only messages one of your organizations may see (shared numbers: visibility and locks, as the history). 429 when too many calls of your organization are waiting on one server; 503 when the server shuts down meanwhile (call again).',
      },
    },
  );
}
