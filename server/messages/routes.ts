import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import { paginate } from "../lib/pagination";
import type { Services } from "../services";
import { findVisibleMessage, type HistoryFilter, historyViewer, messageHistory } from "./history-store";
import { reportDeviceStatus, sendMessage } from "./outbound";
import { HistoryQuery, MessageData, MessagePage, MessageParams, SendBody, StatusBody, StatusParams } from "./schema";

const tags = ["Messages"];

/** The query's date-times were checked by their schema (server/lib/fields.ts `DateTime`). */
const instant = (value: string | undefined) => (value === undefined ? undefined : new Date(value));

/** Message history, single message, sending (API.md §3 "Messages") and device status reports. */
export function messageRoutes(services: Pick<Services, "auth" | "sql" | "jobs" | "events" | "config" | "clock">) {
  const { sql } = services;
  const outbound = { ...services, deviceTimeoutSeconds: services.config.OUTBOUND_DEVICE_TIMEOUT_SECONDS };

  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/messages",
      async ({ caller: c, query, request }) => {
        const perPage = query.per_page ?? query.limit ?? 50;
        const page = query.page ?? 1;
        const filter: HistoryFilter = {
          direction: query.direction,
          from: query.from,
          q: query.q,
          since: instant(query.since),
          until: instant(query.until),
          hasCode: query.has_code === undefined ? undefined : query.has_code === "true",
        };
        const viewer = await historyViewer(sql, c.readScope, query.hosted_sim);
        const found = viewer === null ? null : await messageHistory(sql, { organizationId: viewer, hostedSimId: query.hosted_sim, filter, page, perPage });
        if (!found) throw notFound("Number");
        return paginate({ data: found.rows, total: found.total, page, perPage, request });
      },
      {
        auth: { apiKey: "messages.read" },
        query: HistoryQuery,
        response: { 200: MessagePage },
        detail: {
          tags,
          summary: "Message history of a number, newest first",
          description:
            "A number of any of your organizations. Each organization has its own history of a number; this is that of the first of your organizations attached to it (the one you act in if it is), or of the one X-Organization-Id names.",
        },
      },
    )
    .get(
      "/api/messages/:id",
      async ({ caller: c, params }) => {
        const message = await findVisibleMessage(sql, c.readScope, params.id);
        if (!message) throw notFound("Message");
        return { data: message };
      },
      {
        auth: { apiKey: "messages.read" },
        params: MessageParams,
        response: { 200: MessageData },
        detail: { tags, summary: "One message", description: "A message any of your organizations may see (X-Organization-Id narrows to one)." },
      },
    )
    .post(
      "/api/messages",
      async ({ caller: c, body, set }) => {
        const message = await sendMessage(outbound, c, body);
        set.status = 202;
        return { data: message };
      },
      {
        idempotent: true,
        auth: { apiKey: "none" },
        body: SendBody,
        response: { 202: MessageData },
        detail: { tags, summary: "Send an SMS (counted against the plan)" },
      },
    )
    .post(
      "/api/byos/devices/:device/messages/:message/status",
      async ({ caller: c, params, body }) => {
        const message = await reportDeviceStatus(services, c, { deviceId: params.device, messageId: params.message, status: body.status, error: body.error });
        return { data: message };
      },
      {
        auth: { apiKey: "session_only" },
        params: StatusParams,
        body: StatusBody,
        response: { 200: MessageData },
        detail: { tags: ["BYOS devices"], summary: "A device reports on an SMS it sends" },
      },
    );
}
