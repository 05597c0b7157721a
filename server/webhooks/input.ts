import { validationFailed } from "../errors";
import { MASKED_HEADER_VALUE } from "./present";
import { SIGNATURE_HEADERS } from "./signing";
import { parseTargetUrl } from "./ssrf";
import type { IntegrationFields, IntegrationRow } from "./store";
import { DEFAULT_EVENT_TYPES, eventTypeErrors, normalizeEventTypes } from "./subscriptions";

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
export const MAX_HEADER_NAME = 256;
/** Headers the request itself owns: signature headers and framing. */
const RESERVED = new Set<string>([...SIGNATURE_HEADERS, "content-type", "content-length", "host", "transfer-encoding"]);
/** Hop-by-hop headers (RFC 9110 7.6.1) and Expect: they steer the connection, not the receiver. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "te", "trailer", "upgrade", "expect"]);

function headerError(name: string, value: string): string | null {
  const lower = name.toLowerCase();
  if (!TOKEN.test(name)) return "must be a valid header name";
  if (RESERVED.has(lower)) return "cannot be set: the server sends this header itself";
  if (HOP_BY_HOP.has(lower) || lower.startsWith("proxy-")) return "cannot be set: hop-by-hop and proxy headers are not forwarded";
  if (!PRINTABLE_ASCII.test(value)) return "must be printable ASCII (no line breaks, control or non-ASCII characters)";
  return null;
}

/** Per-header problems, keyed `headers.<name>` as API.md §1 wants nested fields. */
export function headerErrors(headers: Record<string, string>): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    if (name.length > MAX_HEADER_NAME) {
      (errors.headers ??= []).push(`header names must be at most ${MAX_HEADER_NAME} characters`);
      continue;
    }
    // Header names ignore case: two spellings of one would reach the receiver as one header, both values joined.
    const first = seen.get(name.toLowerCase());
    seen.set(name.toLowerCase(), first ?? name);
    const problem = first === undefined ? headerError(name, value) : `is the header ${first} again (header names ignore case)`;
    if (problem) errors[`headers.${name}`] = [problem];
  }
  if (errors.headers) errors.headers = [...new Set(errors.headers)];
  return errors;
}

/**
 * Checks the URL (form, then SSRF guard), the headers and the event types; throws 422 with every
 * problem found. `check` is the engine's SSRF verdict under this server's WEBHOOK_ALLOW_PRIVATE.
 */
export async function validateTarget(
  body: { url: string; headers?: Record<string, string>; event_types?: string[] },
  check: (url: URL) => Promise<string | null>,
  stored?: string,
) {
  const errors: Record<string, string[]> = { ...headerErrors(body.headers ?? {}), ...eventTypeErrors(body.event_types ?? []) };
  const url = parseTargetUrl(body.url);
  if (typeof url === "string") errors.url = [url];
  // The URL an update leaves as it is (`stored`) is not judged again: a host that now resolves to
  // a refused address (or not at all) must not keep its integration from being paused or renamed;
  // every delivery attempt checks the address it connects to anyway.
  else if (body.url !== stored) {
    const refused = await check(url);
    if (refused) errors.url = [`is not allowed: the host ${refused}`];
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

type Body = { name: string; url: string; headers?: Record<string, string>; timeout_seconds?: number; retry_count?: number; event_types?: string[] };

/** Headers sent back as a non-admin saw them: a masked value keeps the stored one. */
function keepMasked(headers: Record<string, string>, existing: Record<string, string> = {}): Record<string, string> {
  // Own names only, and built as own properties: a header named `constructor` or `__proto__` was
  // found on Object.prototype (its masked value replaced by a function, stored as nothing), or set the prototype.
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, value === MASKED_HEADER_VALUE && Object.hasOwn(existing, name) ? existing[name]! : value]),
  );
}

/**
 * Whether an update moves stored header values to another URL: the body changes the URL (its
 * path too: on a shared receiver host, webhook.site or an automation service's hooks, the path
 * names the tenant) and keeps some stored value (omits `headers`, or sends a value masked). A
 * caller who may not read the values must not do it (actions.ts `changeIntegration`): the
 * receiver at the new URL would read them.
 */
export function movesStoredHeaders(body: Pick<Body, "url" | "headers">, existing: Pick<IntegrationRow, "url" | "headers">): boolean {
  const href = (url: string) => URL.parse(url)?.href ?? url;
  if (href(body.url) === href(existing.url)) return false;
  const stored = Object.keys(existing.headers);
  if (body.headers === undefined) return stored.length > 0;
  return Object.entries(body.headers).some(([name, value]) => value === MASKED_HEADER_VALUE && stored.includes(name));
}

/** The stored fields from a create or update body; what an update omits stays as it was. */
export function integrationFields(body: Body, existing?: IntegrationRow): IntegrationFields {
  return {
    name: body.name,
    url: body.url,
    headers: body.headers ? keepMasked(body.headers, existing?.headers) : (existing?.headers ?? {}),
    timeout_seconds: body.timeout_seconds ?? existing?.timeout_seconds ?? 30,
    retry_count: body.retry_count ?? existing?.retry_count ?? 3,
    event_types: body.event_types ? normalizeEventTypes(body.event_types) : (existing?.event_types ?? DEFAULT_EVENT_TYPES),
  };
}
