import { Elysia, t } from "elysia";
import type { Config } from "../config";
import type { Pool } from "../db/client";
import { AppError } from "../errors";
import type { Bus } from "../events/bus";
import type { JobQueue } from "../jobs/queue";
import { type Clock, iso } from "../lib/clock";
import { constantTimeEqual } from "../lib/crypto";
import type { Metrics } from "../lib/metrics";

type Check = { status: "ok" | "failing"; message: string; error?: string };

const Check = t.Object({ status: t.String(), message: t.String(), error: t.Optional(t.String()) });
export const HealthResult = t.Object({
  status: t.String({ description: "ok, degraded (a non-database check fails) or down (the database fails)" }),
  timestamp: t.String({ format: "date-time" }),
  checks: t.Object({ database: Check, cache: Check, queue: Check }),
});

const QUEUE_STALE_SECONDS = 300;

/** Error texts carry no credentials: only the error's code or a generic sentence. */
const safeError = (e: unknown) => {
  const err = e as { code?: string; message?: string };
  return (err.code ? `${err.code}` : (err.message ?? "error")).replace(/\/\/[^@\s]*@/g, "//");
};

async function timed(fn: () => Promise<Check>, ms = 2000): Promise<Check> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<Check>((resolve) => {
        timer = setTimeout(() => resolve({ status: "failing", message: "no answer", error: `timed out after ${ms} ms` }), ms);
      }),
    ]);
  } catch (e) {
    return { status: "failing", message: "unreachable", error: safeError(e) };
  } finally {
    clearTimeout(timer);
  }
}

const errorAnswer = (description: string) => ({ description, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } });

/**
 * /metrics is for the operator's scraper only: a Bearer METRICS_TOKEN, and without one
 * configured it does not exist (404), so a default install shows nothing.
 */
function authorizeScrape(token: string | undefined, authorization: string | null) {
  if (!token) throw new AppError(404, "not_found", "No such route.");
  const presented = authorization?.match(/^Bearer\s+(.+)$/i)?.[1] ?? "";
  if (!constantTimeEqual(presented, token))
    throw new AppError(401, "unauthenticated", "Send the metrics token as a Bearer token.", { headers: { "www-authenticate": 'Bearer realm="metrics"' } });
}

/**
 * Paths this module registers that a configuration switches off: they answer 404 to every method
 * (app.ts teaches the method index only the others, so OPTIONS and a wrong method find nothing either).
 */
export const switchedOffPaths = (config: Pick<Config, "METRICS_TOKEN">): string[] => (config.METRICS_TOKEN ? [] : ["/metrics"]);

export function healthRoutes(deps: { sql: Pool; bus: Bus; jobs: JobQueue; clock: Clock; metrics: Metrics; config: Pick<Config, "METRICS_TOKEN"> }) {
  async function check() {
    const database = await timed(async () => {
      const started = performance.now();
      await deps.sql`select 1`;
      return { status: "ok", message: `round trip ${Math.round(performance.now() - started)} ms` };
    });
    const cache = await timed(async () => {
      if (deps.bus.kind === "local") return { status: "ok", message: "in-process" };
      await deps.bus.ping();
      return { status: "ok", message: "redis PONG" };
    });
    const queue =
      database.status !== "ok"
        ? { status: "failing" as const, message: "unknown", error: "database unreachable" }
        : await timed(async () => {
            const s = await deps.jobs.stats();
            const message = `backlog ${s.backlog}, oldest ${Math.round(s.oldestSeconds)} s, dead ${s.dead}`;
            if (s.oldestSeconds > QUEUE_STALE_SECONDS) return { status: "failing", message, error: `oldest job waiting over ${QUEUE_STALE_SECONDS} s` };
            return { status: "ok", message };
          });
    const status = database.status !== "ok" ? "down" : cache.status !== "ok" || queue.status !== "ok" ? "degraded" : "ok";
    return { status, timestamp: iso(deps.clock.now()), checks: { database, cache, queue } };
  }

  return new Elysia()
    .get(
      "/api/health",
      async ({ set }) => {
        const result = await check();
        if (result.status !== "ok") set.status = 503;
        return result;
      },
      { response: { 200: HealthResult, 503: HealthResult }, detail: { tags: ["Health"], summary: "Database, cache and queue status (no token needed)" } },
    )
    .get(
      "/metrics",
      async ({ request }) => {
        authorizeScrape(deps.config.METRICS_TOKEN, request.headers.get("authorization"));
        return new Response(await deps.metrics.registry.metrics(), { headers: { "content-type": deps.metrics.registry.contentType } });
      },
      {
        detail: {
          tags: ["Health"],
          summary: "Prometheus metrics: Bearer METRICS_TOKEN; 404 when no METRICS_TOKEN is configured",
          responses: {
            200: { description: "Prometheus text format", content: { "text/plain": { schema: { type: "string" } } } },
            401: errorAnswer("unauthenticated: missing or wrong metrics token"),
            404: errorAnswer("not_found: no METRICS_TOKEN configured"),
          },
        },
      },
    );
}
