import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound, validationFailed } from "../errors";
import { paginate } from "../lib/pagination";
import type { Services } from "../services";
import { findVisibleMessage, type HistoryFilter, messageHistory } from "./history-store";
import { reportDeviceStatus, sendMessage } from "./outbound";
import { HistoryQuery, MessageData, MessagePage, MessageParams, SendBody, StatusBody, StatusParams } from "./schema";

const tags = ["Messages"];

/** An ISO date-time PostgreSQL can hold; anything else is the client's mistake (422), never a 500. */
function instant(field: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms) || ms < Date.UTC(1970, 0, 1) || ms > Date.UTC(9999, 11, 31))
    throw validationFailed({ [field]: ["must be a date-time between 1970 and 9999"] });
  return new Date(ms);
}

/** Message history, single message, sending (API.md §3 "Messages") and device status reports. */
export function messageRoutes(services: Pick<Services, "auth" | "sql" | "jobs" | "publish" | "config">) {
  const { sql } = services;
  const outbound = { ...services, deviceTimeoutSeconds: services.config.OUTBOUND_DEVICE_TIMEOUT_SECONDS };

  return new Elysia()
    .use(callerPlugin(services.auth))
    .get(
      "/api/messages",
      async ({ caller, query, request }) => {
        const c = await caller({ apiKey: "messages.read" });
        const perPage = query.per_page ?? query.limit ?? 50;
        const page = query.page ?? 1;
        const filter: HistoryFilter = {
          direction: query.direction,
          from: query.from,
          q: query.q,
          since: instant("since", query.since),
          until: instant("until", query.until),
        };
        const found = await messageHistory(sql, { organizationId: c.organization.id, hostedSimId: query.hosted_sim, filter, page, perPage });
        if (!found) throw notFound("Number");
        return paginate({ data: found.rows, total: found.total, page, perPage, url: request.url });
      },
      { query: HistoryQuery, response: { 200: MessagePage }, detail: { tags, summary: "Message history of a number, newest first" } },
    )
    .get(
      "/api/messages/:id",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "messages.read" });
        const message = await findVisibleMessage(sql, c.organization.id, params.id);
        if (!message) throw notFound("Message");
        return { data: message };
      },
      { params: MessageParams, response: { 200: MessageData }, detail: { tags, summary: "One message" } },
    )
    .post(
      "/api/messages",
      async ({ caller, body, set }) => {
        const c = await caller({ apiKey: "none" });
        const message = await sendMessage(outbound, c, body);
        set.status = 202;
        return { data: message };
      },
      { body: SendBody, response: { 202: MessageData }, detail: { tags, summary: "Send an SMS (counted against the plan)" } },
    )
    .post(
      "/api/byos/devices/:device/messages/:message/status",
      async ({ caller, params, body }) => {
        const c = await caller({ apiKey: "session_only" });
        const message = await reportDeviceStatus(services, c, { deviceId: params.device, messageId: params.message, status: body.status, error: body.error });
        return { data: message };
      },
      {
        params: StatusParams,
        body: StatusBody,
        response: { 200: MessageData },
        detail: { tags: ["BYOS devices"], summary: "A device reports on an SMS it sends" },
      },
    );
}
