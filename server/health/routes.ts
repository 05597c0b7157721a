import { Elysia, t } from "elysia";
import type { Pool } from "../db/client";
import type { JobQueue } from "../jobs/queue";
import type { Metrics } from "../lib/metrics";
import type { Bus } from "../realtime/bus";

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

export function healthRoutes(deps: { sql: Pool; bus: Bus; jobs: JobQueue; metrics: Metrics }) {
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
    return { status, timestamp: new Date().toISOString(), checks: { database, cache, queue } };
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
    .get("/metrics", async () => new Response(await deps.metrics.registry.metrics(), { headers: { "content-type": deps.metrics.registry.contentType } }), {
      detail: { tags: ["Health"], summary: "Prometheus metrics" },
    });
}
