import { readCapped } from "../lib/capped-body";
import { storableText } from "../lib/fields";
import { pinnedRequest } from "./ssrf";

/** What one HTTP attempt came to. `httpStatus` is null when no answer arrived. */
export type AttemptResult = {
  ok: boolean;
  httpStatus: number | null;
  responseBody: string | null;
  responseTimeMs: number;
  error: string | null;
  /** From a Retry-After header, when the receiver sent one. */
  retryAfterMs: number | null;
};

export const RESPONSE_BODY_LIMIT = 4096;
const USER_AGENT = "simhost-webhooks/1.0";

/** Retry-After as delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

function describeFailure(e: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `timed out after ${timeoutMs} ms`;
  const err = e as { code?: string; message?: string };
  const text = err.code ? `${err.code}: ${err.message ?? ""}` : (err.message ?? String(e));
  return `connection failed (${text.trim()})`.slice(0, 500);
}

/**
 * One POST of a webhook body. The timeout covers the whole attempt (connect, headers and the
 * capped body). Redirects are not followed: a 3xx is a failure like any non-2xx.
 */
export async function postWebhook(opts: {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** The address the SSRF guard checked (ssrf.ts resolveTarget): connected to instead of looking the name up again. */
  connectTo?: string | null;
}): Promise<AttemptResult> {
  const signal = AbortSignal.timeout(opts.timeoutMs);
  const start = performance.now();
  const elapsed = () => Math.round(performance.now() - start);
  const pinned = opts.connectTo ? pinnedRequest(new URL(opts.url), opts.connectTo) : null;
  try {
    const res = await fetch(pinned?.url ?? opts.url, {
      method: "POST",
      headers: { "user-agent": USER_AGENT, ...opts.headers, "content-type": "application/json", ...(pinned ? { host: pinned.host } : {}) },
      body: opts.body,
      redirect: "manual",
      // No Accept-Encoding is sent and nothing is decoded: a compressed answer's Content-Length
      // counts its compressed bytes, and a few hundred of them can decode to gigabytes.
      decompress: false,
      signal,
      ...(pinned?.serverName ? { tls: { serverName: pinned.serverName } } : {}),
    });
    // A short answer of known length is read whole (the common case, and cheaper than a stream).
    // One encoded anyway (none was asked for) is not read: its bytes are not text.
    const encoding = res.headers.get("content-encoding")?.trim().toLowerCase();
    const encoded = encoding !== undefined && encoding !== "identity";
    if (encoded) void res.body?.cancel().catch(() => {});
    const length = Number(res.headers.get("content-length") ?? Number.NaN);
    // Stored in the delivery's log record: a NUL in it failed the record's write and every other
    // record of its batch (other organizations' too), and held the log consumer's position for good.
    const responseBody = encoded
      ? `(a body in content-encoding ${encoding.slice(0, 40)}, not read)`
      : storableText(length <= RESPONSE_BODY_LIMIT ? await res.text() : await readCapped(res, RESPONSE_BODY_LIMIT));
    const ok = res.status >= 200 && res.status < 300;
    return {
      ok,
      httpStatus: res.status,
      responseBody,
      responseTimeMs: elapsed(),
      error: ok ? null : res.status >= 300 && res.status < 400 ? `redirect (HTTP ${res.status}) not followed` : `HTTP ${res.status}`,
      retryAfterMs: parseRetryAfter(res.headers.get("retry-after"), Date.now()),
    };
  } catch (e) {
    return {
      ok: false,
      httpStatus: null,
      responseBody: null,
      responseTimeMs: elapsed(),
      error: storableText(describeFailure(e, signal.aborted, opts.timeoutMs)),
      retryAfterMs: null,
    };
  }
}
