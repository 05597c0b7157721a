import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound, validationFailed } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import { paginate } from "../lib/pagination";
import type { Services } from "../services";
import { findVisibleMessage, type HistoryFilter, historyViewer, messageHistory } from "./history-store";
import { inboxRoutes } from "./inbox-routes";
import { cancelMessage, sendMessage } from "./outbound";
import { batchPage, batchSummary } from "./outbound-store";
import { reportDeviceStatus } from "./reports";
import { BatchParams, BatchSummaryData, HistoryQuery, MessageData, MessagePage, MessageParams, SendBody, SendData, StatusBody, StatusParams } from "./schema";

const tags = ["Messages"];

/** The query's date-times were checked by their schema (server/lib/fields.ts `DateTime`). */
const instant = (value: string | undefined) => (value === undefined ? undefined : new Date(value));

/** Message history, single message, sending (API.md §3 "Messages") and device status reports. */
export function messageRoutes(services: Pick<Services, "auth" | "sql" | "jobs" | "events" | "config" | "clock" | "secrets">) {
  const { sql } = services;
  const outbound = { ...services, deviceTimeoutSeconds: services.config.OUTBOUND_DEVICE_TIMEOUT_SECONDS };

  return new Elysia()
    .use(inboxRoutes(services))
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/messages",
      async ({ caller: c, query, request }) => {
        const perPage = query.per_page ?? query.limit ?? 50;
        const page = query.page ?? 1;
        if (query.batch !== undefined) {
          const mixed = (["hosted_sim", "direction", "from", "since", "until", "q", "has_code"] as const).filter((k) => query[k] !== undefined);
          if (mixed.length > 0) throw validationFailed(Object.fromEntries(mixed.map((k) => [k, ["cannot be combined with batch"]])));
          const found = await batchPage(sql, { organizationIds: c.readScope, batchId: query.batch, page, perPage });
          if (!found) throw notFound("Batch");
          return paginate({ data: found.rows, total: found.total, page, perPage, request });
        }
        if (query.hosted_sim === undefined) throw validationFailed({ hosted_sim: ["is required"] });
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
            "A number of any of your organizations. Each organization has its own history of a number; this is that of the first of your organizations attached to it (the one you act in if it is), or of the one X-Organization-Id names. With `batch` instead: the messages of one of your organization's bulk sends, in recipient order (404 for an unknown or another organization's batch).",
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
        const sent = await sendMessage(outbound, c, body);
        set.status = 202;
        if (sent.batchId) return { data: { batch_id: sent.batchId, messages: sent.messages } };
        return { data: sent.messages[0]! };
      },
      {
        idempotent: true,
        auth: { apiKey: "none" },
        body: SendBody,
        response: { 202: SendData },
        detail: {
          tags,
          summary: "Send an SMS (counted against the plan)",
          description:
            '`to` a number: 202 `{ data: message }`. `to` an array (a bulk send of up to 1000): 202 `{ data: { batch_id, messages } }`, all accepted or none (402 when they do not all fit the plan). `send_at` schedules, `expires_at` bounds the wait (docs/api-notes.md "Scheduled, expiring and bulk sends").',
        },
      },
    )
    .post("/api/messages/:id/cancel", async ({ caller: c, params }) => ({ data: await cancelMessage(services, c, params.id) }), {
      auth: { apiKey: "none" },
      params: MessageParams,
      response: { 200: MessageData },
      detail: {
        tags,
        summary: "Cancel a send that has not gone out",
        description:
          "A `scheduled` or `queued` message of your organization (for a BYOS number: its phone has not reported `sending`) becomes `cancelled` and its quota unit is given back. Cancelling a cancelled message answers it again; any other state is 409 `invalid_state`.",
      },
    })
    .get(
      "/api/messages/batches/:id",
      async ({ caller: c, params }) => {
        const summary = await batchSummary(sql, c.readScope, params.id);
        if (!summary) throw notFound("Batch");
        return { data: summary };
      },
      {
        auth: { apiKey: "messages.read" },
        params: BatchParams,
        response: { 200: BatchSummaryData },
        detail: { tags, summary: "Progress of a bulk send: its messages counted per status" },
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
        detail: {
          tags: ["BYOS devices"],
          summary: "A device reports on an SMS it sends",
          description:
            "Moves the message on, with its status event. A repeated report, or one of a step the message has already passed (e.g. `sent` after `delivered`), answers the message unchanged; a report that contradicts a final status (e.g. `sent` after the pick-up timeout failed it) is 409 `invalid_state`. A status never moves backwards.",
        },
      },
    );
}
