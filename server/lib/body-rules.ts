import type { TSchema } from "@sinclair/typebox";
import { AppError, validationFailed } from "../errors";

/**
 * What a route takes as its request body (API.md §0: JSON, except where a route says otherwise),
 * decided once from the app's routes. A body of another media type answers 415
 * `unsupported_media_type` instead of being read as something else (JSON sent as text/plain
 * used to be read as a string and answered "name is required"); a JSON body that is not an
 * object (`[]`, `null`, `5`) answers 422 "the body must be a JSON object", and a list where the
 * route's schema wants an object inside it (a field, an item) "must be an object", an object where
 * it wants a list "must be an array": Elysia's clean-up before validation copies one into the
 * other (`"headers": ["X-A: b"]` became a header named `0`; `"sim_cards": {}` was reported as
 * `sim_cards.0` required), so the shape is judged on the body as parsed.
 */
export const JSON_MEDIA_TYPE = "application/json";
export const FORM_MEDIA_TYPE = "application/x-www-form-urlencoded";

/**
 * A route that takes more than JSON says so in its `detail` (so the OpenAPI operation says it
 * too): `detail: { [BODY_MEDIA_TYPES]: [JSON_MEDIA_TYPE, FORM_MEDIA_TYPE] }`.
 */
export const BODY_MEDIA_TYPES = "x-body-media-types";

/**
 * A route that reads and judges its own input and answers in a format of its own (the OAuth
 * endpoints: RFC 6749 errors, or the sign-in page) says so in its `detail`; the app's NUL check
 * in API.md §1's shape then leaves its query to it.
 */
export const OWN_INPUT = "x-reads-own-input";

type Route = { method: string; path: string; hooks?: { body?: unknown; parse?: unknown; detail?: unknown } };

/** The media type of a Content-Type header, lower case and without parameters. */
export function mediaType(header: string | null): string | null {
  const type = header?.split(";")[0]?.trim().toLowerCase();
  return type || null;
}

/** The media types a route's (or OpenAPI operation's) body may have, from its detail: JSON unless it says more. */
export const bodyMediaTypes = (detail: unknown): readonly string[] =>
  ((detail as Record<string, unknown> | undefined)?.[BODY_MEDIA_TYPES] as readonly string[] | undefined) ?? [JSON_MEDIA_TYPE];

/** The media types a route's body may have; undefined where the route reads no body or reads it itself. */
export function acceptedMediaTypes(route: Route): readonly string[] | undefined {
  if (!route.hooks?.body) return undefined;
  // An explicit `parse` ("text", "none"): the route reads its body itself (the provider callback, OAuth).
  const parse = route.hooks.parse;
  const own = typeof parse === "string" || (Array.isArray(parse) && parse.some((h) => typeof (h?.fn ?? h) === "string"));
  if (own) return undefined;
  return bodyMediaTypes(route.hooks.detail);
}

const hasBody = (request: Request) => {
  const length = request.headers.get("content-length");
  return length === null ? request.headers.has("transfer-encoding") : Number(length) > 0;
};

/** Whether the body is sent with a content coding (gzip, br, ...): the API reads bodies as sent, uncompressed. */
const codedBody = (request: Request) => {
  const coding = request.headers.get("content-encoding")?.trim().toLowerCase();
  return coding !== undefined && coding !== "" && coding !== "identity" && hasBody(request);
};

/** RFC 9110 15.5.16: a content coding the server does not take is a 415 that names the codings it does take. */
export const unsupportedContentEncoding = () =>
  new AppError(415, "unsupported_media_type", "Request bodies are read as sent: send this one uncompressed, without a Content-Encoding header.", {
    headers: { "accept-encoding": "identity" },
  });

export const unsupportedMediaType = (accepted: readonly string[]) =>
  new AppError(415, "unsupported_media_type", `This operation takes its body as ${accepted.join(" or ")}; send it with that Content-Type header.`);

/**
 * The fields (dotted paths, `sim_cards.0`) whose value is a list where the schema wants an object,
 * or an object where it wants a list, with what they must be. Follows the schema's properties,
 * array items and unions, only as deep as the value goes.
 */
export function shapeMismatches(schema: TSchema, value: object, path = "", found: [string, string][] = []): [string, string][] {
  const kinds = (schema.anyOf as TSchema[] | undefined) ?? [schema];
  // Per request: only values that are objects or arrays are followed (their paths built then).
  const follow = (inner: TSchema, v: unknown, key: string | number) => {
    if (typeof v === "object" && v !== null) shapeMismatches(inner, v, path ? `${path}.${key}` : String(key), found);
  };
  const list = kinds.find((s) => s.type === "array");
  const object = kinds.find((s) => s.type === "object");
  if (Array.isArray(value)) {
    if (list?.items) for (let i = 0; i < value.length; i++) follow(list.items as TSchema, value[i], i);
    else if (!list && object) found.push([path, "must be an object"]);
    return found;
  }
  if (list && !object) found.push([path, "must be an array"]);
  const properties = object?.properties as Record<string, TSchema> | undefined;
  if (properties) for (const key in properties) if (Object.hasOwn(value, key)) follow(properties[key]!, (value as Record<string, unknown>)[key], key);
  return found;
}

export const notAnObject = () => validationFailed({ body: ["must be a JSON object"] }, "The body must be a JSON object.");

/** Looks up each request's route once the app is built, and says what is wrong with its body's shape. */
export function createBodyRules() {
  type Rule = { accepted: readonly string[]; schema: TSchema };
  const rules = new Map<string, Map<string, Rule>>();
  const ownInput = new Set<string>();
  // By route, then method: both strings come from Elysia as they are (their hashes cached), where a
  // key built per request would be a new string to hash on every request.
  const ruleOf = (method: string, route: string) => rules.get(route)?.get(method);
  return {
    learn(routes: Route[]) {
      for (const route of routes) {
        if ((route.hooks?.detail as Record<string, unknown> | undefined)?.[OWN_INPUT] === true) ownInput.add(`${route.method} ${route.path}`);
        const accepted = acceptedMediaTypes(route);
        if (!accepted) continue;
        const byMethod = rules.get(route.path) ?? new Map<string, Rule>();
        byMethod.set(route.method, { accepted, schema: route.hooks!.body as TSchema });
        rules.set(route.path, byMethod);
      }
    },
    /** Whether the route reads and judges its own input (`OWN_INPUT`); asked only of a request holding a NUL. */
    readsOwnInput: (method: string, route: string) => ownInput.has(`${method} ${route}`),
    /** The body schema of a route that takes a body. */
    schema: (method: string, route: string) => ruleOf(method, route)?.schema,
    /** The error a body of this route's request stands for, before its fields are looked at; null when its shape is fine. */
    refusal(request: Request, route: string, raw: unknown): AppError | null {
      const rule = ruleOf(request.method, route);
      if (!rule) return null;
      if (codedBody(request)) return unsupportedContentEncoding();
      const header = request.headers.get("content-type");
      const type = header === JSON_MEDIA_TYPE ? header : mediaType(header);
      if (type === null) return hasBody(request) ? unsupportedMediaType(rule.accepted) : null;
      if (!rule.accepted.includes(type)) return unsupportedMediaType(rule.accepted);
      if (type !== JSON_MEDIA_TYPE || raw === undefined) return null;
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return notAnObject();
      const mismatches = shapeMismatches(rule.schema, raw);
      return mismatches.length > 0 ? validationFailed(Object.fromEntries(mismatches.map(([field, rule]) => [field, [rule]]))) : null;
    },
  };
}
