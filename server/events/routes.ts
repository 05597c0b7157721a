import { Elysia } from "elysia";
import { callerPlugin, type RouteRule } from "../auth/plugin";
import { AppError, ErrorBody, validationFailed } from "../errors";
import { holdOpen } from "../lib/versions";
import { answerRevokedWait, refusedError, shuttingDown } from "../lib/waiters";
import type { Services } from "../services";
import { EVENT_PERMISSIONS, readableTypes, refuseUnheldTypes, requestedTypes } from "./access";
import { decodeCursor, encodeCursor, isAfter, ORIGIN, type Position } from "./cursor";
import { readEventPage } from "./list-store";
import { highWaterPosition, removedAfter, type StoredEvent } from "./log";
import { EventPage, EventsQuery, isEventTypeList, TYPES_ERROR } from "./schema";

const DEFAULT_PER_PAGE = 100;

const render = (e: StoredEvent) => ({
  id: e.cursor,
  type: e.type,
  created_at: e.createdAt.toISOString(),
  organization_id: e.organizationId,
  data: e.payload,
});

type Page = { events: StoredEvent[]; hasMore: boolean };

/** The answer: the events, and the cursor to call again with (the last event's id, else `emptyCursor`). */
const pageAnswer = (page: Page, perPage: number, emptyCursor: string) => ({
  data: page.events.map(render),
  meta: { next_cursor: page.events.at(-1)?.cursor ?? emptyCursor, per_page: perPage, has_more: page.hasMore },
});

/**
 * The answer of waiters woken by the tail, as JSON bytes built from each event's JSON rendered once:
 * one wake-up hands the same event objects to every waiter it wakes, so the waiters woken with
 * the same events (1,000 waiters of one organization) share one body, encoded once, rather than
 * a thousand renderings. The text skips the per-answer validation and cleaning of the response
 * schema, which `render` meets by construction (test/integration/events-wait.test.ts compares it
 * with the listed answer). Bodies are filed under the first event, so they go with the events.
 */
const renderedJson = new WeakMap<StoredEvent, string>();
const wokenBodies = new WeakMap<StoredEvent, Map<string, Uint8Array<ArrayBuffer>>>();
const utf8 = new TextEncoder();
function wokenBody(events: StoredEvent[], perPage: number): Uint8Array<ArrayBuffer> {
  const hasMore = events.length > perPage;
  const shown = hasMore ? events.slice(0, perPage) : events;
  // Waiters with other filters may collect other events after the same first one.
  const key = `${perPage}${hasMore ? "+" : ""}:${shown.length === 1 ? "" : shown.map((e) => e.cursor).join(",")}`;
  let bodies = wokenBodies.get(shown[0]!);
  if (!bodies) wokenBodies.set(shown[0]!, (bodies = new Map()));
  let body = bodies.get(key);
  if (body) return body;
  const json = shown.map((e) => {
    let text = renderedJson.get(e);
    if (text === undefined) renderedJson.set(e, (text = JSON.stringify(render(e))));
    return text;
  });
  const meta = { next_cursor: shown.at(-1)!.cursor, per_page: perPage, has_more: hasMore };
  body = utf8.encode(`{"data":[${json.join(",")}],"meta":${JSON.stringify(meta)}}`);
  bodies.set(key, body);
  return body;
}
// Headers per answer: the app's hooks add the request's own (x-request-id) to them.
const wokenAnswer = (events: StoredEvent[], perPage: number) =>
  new Response(wokenBody(events, perPage), { headers: { "content-type": "application/json;charset=utf-8" } });

const RULE: RouteRule = { apiKey: EVENT_PERMISSIONS, refine: refuseUnheldTypes };

const cursorExpired = () =>
  new AppError(
    410,
    "cursor_expired",
    "Events after this cursor were removed: the log keeps them EVENT_RETENTION_DAYS days (30 by default). Read again without `after` to start at the oldest event kept.",
  );

/** `GET /api/events`: the caller's events after a cursor, optionally waiting for the first (issue 16, docs/events.md "Catching up and waiting"). */
export function eventRoutes(services: Pick<Services, "auth" | "sql" | "eventWaiters">) {
  const { sql, eventWaiters } = services;

  return new Elysia().use(callerPlugin(services.auth)).get(
    "/api/events",
    async ({ caller: c, query, request, server }) => {
      // Schema-checked: `now` or a cursor that decodes. A cursor of another organization's event only positions the read.
      const start: Position | null = query.after === undefined ? null : query.after === "now" ? await highWaterPosition(sql) : decodeCursor(query.after)!;
      const after = start ?? ORIGIN;
      // Events after the cursor were removed by retention: resuming there would skip them unseen.
      // The log's start (the cursor of an empty first read) means "from the oldest kept", as no `after` does.
      if (start && isAfter(start, ORIGIN) && (await removedAfter(sql, start))) throw cursorExpired();
      // The schema checked the last `types`; the others are checked here, as part of the whole list.
      const asked = requestedTypes(request);
      if (asked !== undefined && !isEventTypeList(asked)) throw validationFailed({ types: [TYPES_ERROR] });
      const types = readableTypes(c, asked);
      const perPage = query.per_page ?? DEFAULT_PER_PAGE;
      const filter = { organizations: c.readScope, types: types ?? undefined, hostedSimId: query.hosted_sim, deviceId: query.device };
      // An empty answer keeps the cursor the client sent; from `now` or the log's start it names that position.
      const answer = (page: Page) => pageAnswer(page, perPage, query.after !== undefined && query.after !== "now" ? query.after : encodeCursor(after));
      const read = () => readEventPage(sql, after, filter, perPage);
      if (query.wait === undefined || types?.length === 0) return answer(await read());

      // Bun closes a connection idle for `idleTimeout` (Elysia: 30 s); this one is quiet on purpose.
      holdOpen(server, request, query.wait + 10);
      const outcome = await eventWaiters.wait(
        {
          match: { organizations: c.readScope, types, hostedSimId: query.hosted_sim, deviceId: query.device, after },
          quotaOrganization: c.organization.id,
          caller: c,
          limit: perPage + 1,
          timeoutMs: query.wait * 1000,
          signal: request.signal,
        },
        async () => {
          const page = await read();
          return page.events.length > 0 ? page : null;
        },
      );
      if ("refused" in outcome) throw refusedError(outcome.refused, eventWaiters.limits);
      if ("found" in outcome) return answer(outcome.found);
      // The same body as `answer` would give, already serialized (see wokenAnswer).
      if ("woken" in outcome) return wokenAnswer(outcome.woken, perPage) as unknown as ReturnType<typeof answer>;
      if (outcome.ended === "shutdown") throw shuttingDown();
      if (outcome.ended === "revoked") await answerRevokedWait(services.auth, request, RULE);
      return answer({ events: [], hasMore: false });
    },
    {
      auth: RULE,
      query: EventsQuery,
      response: { 200: EventPage, 410: ErrorBody },
      detail: {
        tags: ["Events"],
        summary: "List events after a cursor, or wait for the next",
        description:
          "The events of your organizations (`X-Organization-Id` narrows them to one) in log order, after `after`. Call again with `after=meta.next_cursor` to catch up; `has_more` tells whether the next page follows at once. With `wait`, an answer that would be empty waits up to that many seconds for the first matching event. An API key reads the event families its permissions cover (message.*: messages.read; number.*, device.*, sim.*, config.*: numbers.read; webhook.*: webhooks.receive); naming in `types` a type it may not read answers 403. 422 for a cursor this server did not issue; 410 `cursor_expired` for one older than the log's retention (events after it were removed: read again without `after`); 429 when too many calls of your organization wait on one server; 503 when the server shuts down meanwhile (call again).",
      },
    },
  );
}
