import { swagger } from "@elysiajs/swagger";
import { Elysia } from "elysia";
import { isDatabaseUnavailable } from "./db/client";
import { AppError, errorResponse, unavailable, validationFailed } from "./errors";
import { healthRoutes } from "./health/routes";
import { createDeprecations, DEPRECATIONS, type Deprecation } from "./lib/deprecations";
import { toOpenApi30 } from "./lib/openapi";
import { fieldErrors } from "./lib/validation";
import { websocketServerOptions } from "./realtime/limits";
import { featureRoutes, v2Routes } from "./routes";
import type { Services } from "./services";

type Issue = { path: string; value: unknown; schema?: never; message?: string };

/**
 * Elysia reports a bound broken by a number it coerced from a query or path string without the
 * field's path. The field is the one whose raw value is that number.
 */
function locate(issue: Issue, inputs: Record<string, unknown>): Issue {
  if (issue.path !== "" || (typeof issue.value !== "number" && typeof issue.value !== "string")) return issue;
  const matches = Object.entries(inputs).filter(([, raw]) => raw !== undefined && String(raw) !== "" && Number(raw) === Number(issue.value));
  return matches.length === 1 ? { ...issue, path: `/${matches[0]![0]}` } : issue;
}

/** Any thrown value → the API.md §1 error it stands for. */
export function toAppError(code: string | number, error: unknown, inputs: Record<string, unknown> = {}): AppError {
  if (error instanceof AppError) return error;
  if (code === "VALIDATION") {
    const all = ((error as { all?: Issue[] }).all ?? []) as Issue[];
    return validationFailed(fieldErrors(all.map((issue) => locate(issue, inputs))));
  }
  if (code === "PARSE") return new AppError(400, "malformed_body", "The request body could not be parsed; send valid JSON (or form data where documented).");
  if (code === "NOT_FOUND") return new AppError(404, "not_found", "No such route.");
  if (code === "INVALID_COOKIE_SIGNATURE") return new AppError(400, "malformed_body", "Invalid cookie.");
  if (isDatabaseUnavailable(error)) return unavailable();
  // Text PostgreSQL cannot store (a NUL byte that slipped past the request check): bad input.
  if ((error as { code?: string })?.code === "22021" || (error as { code?: string })?.code === "22P05")
    return validationFailed({ request: ["must not contain NUL characters"] });
  return new AppError(500, "internal_error", "Something went wrong on our side; the request id identifies it in our logs.");
}

/**
 * PostgreSQL text cannot hold NUL characters, so any request field carrying one is refused up
 * front with its path, before a handler could write part of its work.
 */
function nulFields(value: unknown, path: string, out: Record<string, string[]>): Record<string, string[]> {
  if (typeof value === "string") {
    if (value.includes("\u0000")) out[path.replace(/^(body|query)\./, "")] = ["must not contain NUL characters"];
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) nulFields(value[i], `${path}.${i}`, out);
  } else if (value && typeof value === "object") for (const k in value) nulFields((value as Record<string, unknown>)[k], `${path}.${k}`, out);
  return out;
}

/** Whether any string in `value` holds a NUL (the common answer, no, without building paths). */
function hasNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (Array.isArray(value)) return value.some(hasNul);
  if (value && typeof value === "object") for (const k in value) if (hasNul((value as Record<string, unknown>)[k])) return true;
  return false;
}

const timings = new WeakMap<Request, { id: string; start: number }>();

/** The HTTP application. It never listens: main.ts serves it, tests call `app.handle`. */
export function buildApp(services: Services, opts: { deprecations?: Deprecation[] } = {}) {
  const { logger, metrics } = services;
  const deprecations = createDeprecations(opts.deprecations ?? DEPRECATIONS, services.config.PUBLIC_URL);
  const app = new Elysia({ websocket: websocketServerOptions })
    .onRequest(({ request, set }) => {
      const id = request.headers.get("x-request-id")?.slice(0, 64) || crypto.randomUUID();
      timings.set(request, { id, start: performance.now() });
      set.headers["x-request-id"] = id;
    })
    .onTransform(({ body, query }) => {
      if (hasNul(body) || hasNul(query)) throw validationFailed(nulFields(query, "query", nulFields(body, "body", {})));
    })
    .onError(({ code, error, request, route, set, params }) => {
      const versioned = code === "NOT_FOUND" ? unversioned(request) : null;
      if (versioned) return app.handle(versioned);
      const inputs = code === "VALIDATION" ? { ...Object.fromEntries(new URL(request.url).searchParams), ...(params as Record<string, unknown>) } : {};
      const appError = toAppError(code, error, inputs);
      set.status = appError.status;
      const id = timings.get(request)?.id;
      if (appError.status >= 500 && appError.code === "internal_error") {
        logger.error({ requestId: id, route, err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error) }, "unhandled error");
      }
      return errorResponse(appError, id);
    })
    .onAfterHandle(({ request, route, set, response }) => {
      if (route === "/openapi.json") return deprecations.annotate(toOpenApi30(response as never));
      const headers = deprecations.signal(request.method, route, request.url);
      if (headers) Object.assign(set.headers, headers);
    })
    .onAfterResponse(({ request, route, set }) => {
      const t = timings.get(request);
      if (!t) return;
      const seconds = (performance.now() - t.start) / 1000;
      const status = typeof set.status === "number" ? set.status : 200;
      const path = route || "unmatched";
      metrics.httpRequests.observe({ method: request.method, route: path, status: String(status) }, seconds);
      if (logger.isLevelEnabled("info"))
        logger.info({ requestId: t.id, method: request.method, route: path, status, ms: Math.round(seconds * 10000) / 10 }, "request");
    })
    .use(
      swagger({
        path: "/docs",
        specPath: "/openapi.json",
        // The v1 document: later versions' own routes are documented separately.
        exclude: ["/docs", "/openapi.json", /^\/api\/v\d+\//],
        documentation: {
          info: {
            title: "simhost API",
            version: "1.0.0",
            description: "Hosted SIM messaging. Errors always have the shape { message, code, errors? } (API.md §1).",
          },
          components: {
            securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "Session token, OAuth access token or API key (sk_...)" } },
            schemas: {
              Error: {
                type: "object",
                required: ["message", "code"],
                properties: {
                  message: { type: "string" },
                  code: { type: "string" },
                  errors: { type: "object", additionalProperties: { type: "array", items: { type: "string" } } },
                },
              },
            },
          },
          security: [{ bearer: [] }],
        },
      }),
    )
    .get("/changelog", () => new Response(Bun.file(CHANGELOG), { headers: { "content-type": "text/markdown; charset=utf-8" } }), {
      detail: { hide: true },
    })
    .use(healthRoutes(services))
    .use(featureRoutes(services))
    .use(v2Routes(services));
  return app;
}

const CHANGELOG = new URL("../CHANGELOG.md", import.meta.url).pathname;

const VERSIONED = /^\/api\/v(\d+)(\/.*)$/;

/**
 * `/api/v1/...` is the current API under its version prefix (SPEC.md 9.1). A version answers
 * with its own route where it has one, and otherwise with the unversioned route: the router
 * found nothing for the prefixed path, so the request is handled again without the prefix.
 */
function unversioned(request: Request): Request | null {
  const url = new URL(request.url);
  const match = url.pathname.match(VERSIONED);
  if (!match || !SUPPORTED_VERSIONS.has(Number(match[1]))) return null;
  url.pathname = `/api${match[2]}`;
  return new Request(url.toString(), request);
}

const SUPPORTED_VERSIONS = new Set([1, 2]);

export type App = ReturnType<typeof buildApp>;
