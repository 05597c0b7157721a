import { validationFailed } from "../errors";
import { SIGNATURE_HEADERS } from "./signing";
import { parseTargetUrl } from "./ssrf";
import type { IntegrationFields, IntegrationRow } from "./store";

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the request itself owns: signature headers and framing. */
const RESERVED = new Set<string>([...SIGNATURE_HEADERS, "content-type", "content-length", "host", "transfer-encoding", "connection"]);

/** Per-header problems, keyed `headers.<name>` as API.md §1 wants nested fields. */
export function headerErrors(headers: Record<string, string>): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const field = `headers.${name}`;
    if (!TOKEN.test(name)) errors[field] = ["must be a valid header name"];
    else if (RESERVED.has(name.toLowerCase())) errors[field] = ["cannot be set: the server sends this header itself"];
    else if (/[\r\n\0]/.test(value)) errors[field] = ["must not contain line breaks"];
  }
  return errors;
}

/**
 * Checks the URL (form, then SSRF guard) and the headers; throws 422 with every problem found.
 * `check` is the engine's SSRF verdict under this server's WEBHOOK_ALLOW_PRIVATE.
 */
export async function validateTarget(body: { url: string; headers?: Record<string, string> }, check: (url: URL) => Promise<string | null>) {
  const errors: Record<string, string[]> = headerErrors(body.headers ?? {});
  const url = parseTargetUrl(body.url);
  if (typeof url === "string") errors.url = [url];
  else {
    const refused = await check(url);
    if (refused) errors.url = [`is not allowed: the host ${refused}`];
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

type Body = { name: string; url: string; headers?: Record<string, string>; timeout_seconds?: number; retry_count?: number };

/** The stored fields from a create or update body; what an update omits stays as it was. */
export function integrationFields(body: Body, existing?: IntegrationRow): IntegrationFields {
  return {
    name: body.name,
    url: body.url,
    headers: body.headers ?? existing?.headers ?? {},
    timeout_seconds: body.timeout_seconds ?? existing?.timeout_seconds ?? 30,
    retry_count: body.retry_count ?? existing?.retry_count ?? 3,
  };
}
