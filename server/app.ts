import { Elysia, ElysiaCustomStatusResponse } from "elysia";
import { consoleRoutes } from "./console/routes";
import { isDatabaseUnavailable } from "./db/client";
import { openApiDocument } from "./docs/document";
import { docsRoutes } from "./docs/routes";
import { AppError, errorResponse, unavailable, validationFailed } from "./errors";
import { addEventPayloads } from "./events/openapi";
import { healthRoutes, switchedOffPaths } from "./health/routes";
import { createBodyRules } from "./lib/body-rules";
import { createDeprecations, DEPRECATIONS, type Deprecation } from "./lib/deprecations";
import { dropAbsentNulls } from "./lib/fields";
import { settleFailedRequest } from "./lib/idempotency";
import { createMethodIndex, methodNotAllowed, optionsAnswer } from "./lib/methods";
import { toOpenApi30 } from "./lib/openapi";
import { BUN_BODY_BYTES, checkRequest, MAX_BODY_DEPTH, tooDeep } from "./lib/request-limits";
import { fieldErrors, intoUnionMember, throughScalar } from "./lib/validation";
import { unversioned } from "./lib/versions";
import { SEND_BODY_BYTES, SEND_PATH } from "./messages/send-request";
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

const internalError = () => new AppError(500, "internal_error", "Something went wrong on our side; the request id identifies it in our logs.");

/** Any thrown value → the API.md §1 error it stands for. `body` is the request body as parsed, before validation. */
export function toAppError(code: string | number, error: unknown, inputs: Record<string, unknown> = {}, body?: unknown): AppError {
  if (error instanceof AppError) return error;
  // Elysia checks answers against their `response` schema: a mismatch is our bug, not the client's.
  if (code === "VALIDATION" && (error as { type?: string }).type === "response") return internalError();
  if (code === "VALIDATION") {
    const all = ((error as { all?: Issue[] }).all ?? []) as Issue[];
    return validationFailed(fieldErrors(all.flatMap((issue) => intoUnionMember(throughScalar(locate(issue, inputs), body)))));
  }
  // A body over the limit fails its read inside Elysia's parser, which wraps the error.
  if (code === "PARSE" && (error as { cause?: unknown })?.cause instanceof AppError) return (error as { cause: AppError }).cause;
  if (code === "PARSE") return new AppError(400, "malformed_body", "The request body could not be parsed; send valid JSON (or form data where documented).");
  if (code === "NOT_FOUND") return new AppError(404, "not_found", "No such route.");
  if (code === "INVALID_COOKIE_SIGNATURE") return new AppError(400, "malformed_body", "Invalid cookie.");
  if (isDatabaseUnavailable(error)) return unavailable();
  // Text PostgreSQL cannot store (a NUL byte that slipped past the request check): bad input.
  if ((error as { code?: string })?.code === "22021" || (error as { code?: string })?.code === "22P05")
    return validationFailed({ request: ["must not contain NUL characters"] });
  return internalError();
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

/** Each request's id and start; `counted` once it is in the duration histogram. */
const timings = new WeakMap<Request, { id: string; start: number; counted: boolean }>();
/** Each request's body as parsed, before validation reshapes it (server/lib/body-rules.ts looks at it). */
const parsedBodies = new WeakMap<Request, unknown>();

/**
 * A request id unique in this process's life (a random prefix per start, then a counter): as
 * good as a UUID for finding a request in the logs, without drawing random bytes per request.
 */
const idPrefix = `${crypto.randomUUID().slice(0, 13)}-`;
let idCounter = 0;
const nextRequestId = () => idPrefix + (++idCounter).toString(36);

/** The path of an absolute request URL, without parsing the whole URL (this runs on every POST). */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const query = url.indexOf("?", start);
  const fragment = url.indexOf("#", start);
  const end = query < 0 ? fragment : fragment < 0 ? query : Math.min(query, fragment);
  return end < 0 ? url.slice(start) : url.slice(start, end);
}

/** The request of POST /api/messages (any version prefix), whose body may be larger than others. */
const isSendRequest = (request: Request) => request.method === "POST" && SEND_PATH.test(pathOf(request.url));

/** The HTTP application. It never listens: main.ts serves it, tests call `app.handle`. */
export function buildApp(services: Services, opts: { deprecations?: Deprecation[]; versionSunsets?: Record<number, string> } = {}) {
  const { logger, metrics } = services;
  const deprecations = createDeprecations(opts.deprecations ?? DEPRECATIONS, services.config.PUBLIC_URL, opts.versionSunsets);
  const bodies = createBodyRules();
  const methods = createMethodIndex();
  const limits = { bodyBytes: services.config.MAX_BODY_BYTES, headerBytes: services.config.MAX_HEADER_BYTES };
  // A bulk send (1000 recipients with their variables) may be larger than other bodies.
  const sendLimits = { ...limits, bodyBytes: Math.max(limits.bodyBytes, SEND_BODY_BYTES) };
  const webConsole = consoleRoutes(services.config);
  /**
   * Counts a request in the duration histogram and logs it, once. Called
   * where its answer is decided (an early refusal, afterHandle, onError) rather than from an
   * afterResponse hook, for which Elysia schedules a setImmediate on every request.
   */
  const finish = (request: Request, route: string, status: number) => {
    const t = timings.get(request);
    if (!t || t.counted) return;
    t.counted = true;
    const seconds = (performance.now() - t.start) / 1000;
    const path = route || "unmatched";
    metrics.observeRequest(request.method, path, status, seconds);
    if (logger.isLevelEnabled("info"))
      logger.info({ requestId: t.id, method: request.method, route: path, status, ms: Math.round(seconds * 10000) / 10 }, "request");
  };
  // development: false: an error escaping the app gets Bun's bare 500, never its development page (a stack trace, the server's paths).
  const app = new Elysia({ websocket: websocketServerOptions, serve: { maxRequestBodySize: BUN_BODY_BYTES, development: false } })
    // Global hooks run for every request: none may read as async to Elysia (an `await`, or a
    // `return f(...)` in its source), since Elysia then awaits it, which costs every request a tick.
    .onRequest(({ request, set }) => {
      const id = request.headers.get("x-request-id")?.slice(0, 64) || nextRequestId();
      timings.set(request, { id, start: performance.now(), counted: false });
      set.headers["x-request-id"] = id;
      // Before routing, authentication and parsing: an oversized request costs nothing more.
      const refused = checkRequest(request, isSendRequest(request) ? sendLimits : limits);
      let answer: Response | undefined;
      if (refused) {
        set.status = refused.status;
        answer = errorResponse(refused, id);
        finish(request, "", refused.status);
      }
      return answer;
    })
    .onTransform(({ body, request, route }) => {
      // First: every walk of the body below may recurse.
      const deep = tooDeep(body);
      if (deep !== null) throw validationFailed({ [deep]: [`must not nest objects and arrays more than ${MAX_BODY_DEPTH} levels deep`] });
      if (body !== undefined) parsedBodies.set(request, body);
      dropAbsentNulls(bodies.schema(request.method, route), body);
    })
    // Typed, so the app's type does not depend on itself through `app.handle`.
    .onError(({ code, error, request, route, set, params }): Response | Promise<Response> => {
      const versioned = code === "NOT_FOUND" ? unversioned(request) : null;
      if (versioned) {
        // Counted (with its route) as the unversioned request it is answered as.
        const t = timings.get(request);
        if (t) t.counted = true;
        return app.handle(versioned);
      }
      const consolePage = code === "NOT_FOUND" ? webConsole.fallback(request) : null;
      if (consolePage) {
        finish(request, route, consolePage instanceof Response ? consolePage.status : 200);
        return consolePage;
      }
      const id = timings.get(request)?.id;
      const allowed = code === "NOT_FOUND" ? methods.allowed(pathOf(request.url)) : null;
      if (allowed && request.method === "OPTIONS") {
        finish(request, route, 204);
        return optionsAnswer(allowed, id);
      }
      const inputs = code === "VALIDATION" ? { ...Object.fromEntries(new URL(request.url).searchParams), ...(params as Record<string, unknown>) } : {};
      const body = parsedBodies.get(request);
      const shape = code === "VALIDATION" && (error as { type?: string }).type === "body" ? bodies.refusal(request, route, body) : null;
      let appError = shape ?? (allowed ? methodNotAllowed(request.method, allowed) : toAppError(code, error, inputs, body));
      // A body that could not be parsed (gzip bytes sent as JSON) may be refused for its media type
      // or its coding, which says more than "malformed"; a read that failed with 413 keeps its 413.
      if (code === "PARSE" && appError.code === "malformed_body") appError = bodies.refusal(request, route, body) ?? appError;
      set.status = appError.status;
      finish(request, route, appError.status);
      if (appError.status >= 500 && appError.code === "internal_error") {
        logger.error({ requestId: id, route, err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error) }, "unhandled error");
      }
      // A request that holds an Idempotency-Key keeps this answer under it before it goes out.
      return settleFailedRequest(request, appError).then(
        () => errorResponse(appError, id),
        () => errorResponse(appError, id),
      );
    })
    // After authorization (a caller the route refuses is told so, whatever the input holds) and validation.
    .onBeforeHandle(({ body, query, request, route }) => {
      if ((hasNul(body) || hasNul(query)) && !bodies.readsOwnInput(request.method, route))
        throw validationFailed(nulFields(query, "query", nulFields(body, "body", {})));
      // A body that passed validation may still be of a type the route does not take (form data on a JSON route).
      const refused = bodies.refusal(request, route, parsedBodies.get(request));
      if (refused) throw refused;
      // After authorization and validation, like any other field error (SPEC.md 9.2: gone only in a later version).
      const removed = deprecations.removed(request.method, route, request);
      if (removed) throw validationFailed({ [removed.field]: [removed.message] });
    })
    .onAfterHandle(({ request, route, set, response }) => {
      let document: Record<string, unknown> | undefined;
      if (route === "/openapi.json") document = deprecations.annotate(addEventPayloads(toOpenApi30(response as never)));
      else {
        const headers = deprecations.signal(request.method, route, request);
        if (headers) Object.assign(set.headers, headers);
      }
      // The answer is decided here (a response schema check failing after this is our bug, a 500
      // that onError logs; the histogram then keeps the status the handler meant).
      const status =
        response instanceof Response
          ? response.status
          : response instanceof ElysiaCustomStatusResponse
            ? (response.code as number)
            : typeof set.status === "number"
              ? set.status
              : 200;
      finish(request, route, status);
      return document;
    })
    .use(openApiDocument())
    .use(docsRoutes(() => document30()))
    .get("/changelog", () => new Response(Bun.file(CHANGELOG), { headers: { "content-type": "text/markdown; charset=utf-8" } }), {
      detail: { hide: true },
    })
    .use(healthRoutes(services))
    .use(webConsole.routes)
    .use(featureRoutes(services))
    .use(v2Routes(services));
  bodies.learn(app.routes);
  const off = new Set(switchedOffPaths(services.config));
  methods.learn(app.routes.filter((r) => !off.has(r.path)));
  // Typed, like onError's answer, so the app's type does not depend on itself through `app.handle`.
  const document30 = async (): Promise<Record<string, unknown>> =>
    (await (app.handle(new Request(`${services.config.PUBLIC_URL}/openapi.json`)) as Promise<Response>)).json() as Promise<Record<string, unknown>>;
  return app;
}

const CHANGELOG = new URL("../CHANGELOG.md", import.meta.url).pathname;

export type App = ReturnType<typeof buildApp>;
