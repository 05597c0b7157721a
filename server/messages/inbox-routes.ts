import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import type { Services } from "../services";
import { inboxPage } from "./history-store";
import { InboxPage, InboxQuery } from "./schema";

/** GET /api/inbox: every number's inbound messages in one list (docs/api-notes.md "Inbox of every number"). */
export function inboxRoutes(services: Pick<Services, "auth" | "sql">) {
  return new Elysia().use(callerPlugin(services.auth)).get(
    "/api/inbox",
    async ({ caller: c, query }) => {
      const perPage = query.per_page ?? 50;
      const filter = { from: query.from, q: query.q, hasCode: query.has_code === undefined ? undefined : query.has_code === "true" };
      // One more than asked tells whether an older page exists without counting.
      const rows = await inboxPage(services.sql, { organizationId: c.organization.id, filter, before: query.before, limit: perPage + 1 });
      const data = rows.slice(0, perPage);
      return { data, meta: { per_page: perPage, next_before: rows.length > perPage ? data[data.length - 1]!.id : null } };
    },
    {
      auth: { apiKey: "messages.read" },
      query: InboxQuery,
      response: { 200: InboxPage },
      detail: {
        tags: ["Messages"],
        summary: "Inbound messages of every number, newest first",
        description:
          "The inbound messages of every number the organization you act in (X-Organization-Id, else your first; an API key's own) is attached to now, as that organization sees them, newest (highest id) first. Pages are keyset pages: pass `meta.next_before` as `before` for older ones; messages arriving meanwhile do not shift them.",
      },
    },
  );
}
