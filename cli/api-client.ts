import createClient, { type Client } from "openapi-fetch";
import type { ApiErrorBody, Json, paths } from "../clients/api";
import { loadCredential } from "./credentials";
import { CliError, type GlobalOptions, printable, printableDeep } from "./output";

export const DEFAULT_URL = "http://localhost:3000";

/**
 * What is wrong with a server URL, or null: it needs http:// or https:// and a host. Without a
 * scheme, `localhost:3000` parsed as the scheme `localhost:` (and `simhost.example.com:3000` went
 * unwarned over plain http), `127.0.0.1:3000` failed as "Invalid URL" on the first request.
 */
export function serverUrlProblem(url: string): string | null {
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname)
    return `${JSON.stringify(url)} is not a server URL: write it with its scheme, e.g. http://localhost:3000 or https://simhost.example.com.`;
  return null;
}

export function serverUrl(opts: GlobalOptions): string {
  const url = opts.url || process.env.SIMHOST_URL || DEFAULT_URL;
  const problem = serverUrlProblem(url);
  if (problem) throw new CliError(opts.url ? problem : `SIMHOST_URL: ${problem}`);
  return url.replace(/\/+$/, "");
}

/**
 * The warning for credentials sent to `url` in clear: plain http to a host other than this
 * machine (loopback: `localhost`, `*.localhost`, 127.0.0.0/8, ::1). Null when there is nothing to say.
 */
export function plainHttpWarning(url: string): string | null {
  const { protocol, hostname, origin } = new URL(url);
  if (protocol !== "http:") return null;
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost") || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return null;
  return `warning: ${origin} is plain http: your token and password cross the network unencrypted. Use https:// unless this network is yours alone.`;
}

/** A typed client of the API (openapi-fetch over the generated types of clients/). */
export type TypedClient = Client<paths, Json>;

type Outcome<D> = { data?: D; error?: unknown; response: Response };

/** A webhook test waits for the target up to the integration's timeout_seconds, at most this. */
const WEBHOOK_TEST_SECONDS = 120;
const WEBHOOK_TEST = /\/(webhook-integrations|webhooks)\/\d+\/test$/;

/**
 * How long a request may go unanswered: SIMHOST_REQUEST_TIMEOUT_SECONDS (30), plus the time the
 * server may hold it on purpose: a long-poll's (`wait` of `GET /api/events`, `timeout` of
 * `messages/next`), a webhook test's (the target's time, up to 120 s). A server that accepts and
 * never answers fails the command ("Could not reach ...") instead of hanging it for good.
 */
export function requestTimeoutMs(url: string): number {
  const u = new URL(url);
  const q = u.searchParams;
  const held = Math.max(Number(q.get("wait")) || 0, Number(q.get("timeout")) || 0, WEBHOOK_TEST.test(u.pathname) ? WEBHOOK_TEST_SECONDS : 0);
  return ((Number(process.env.SIMHOST_REQUEST_TIMEOUT_SECONDS) || 30) + held) * 1000;
}

/**
 * The CLI's HTTP client: `api.GET("/api/numbers/{id}", ...)` and the other methods are
 * openapi-fetch's, typed from the OpenAPI document; `api.ok(...)` unwraps an answer. Token:
 * --token, else SIMHOST_TOKEN, else the one `simhost login` saved for this server (asked for on
 * the first request that needs one). `api.anonymous` sends none (login, health).
 */
export function createApiClient(opts: GlobalOptions) {
  const base = serverUrl(opts);
  let warned = false;
  /** Once per command, before the first request that carries a credential (a token, or a password to /api/auth/...). */
  const warnIfPlain = () => {
    const warning = warned ? null : plainHttpWarning(base);
    warned = true;
    if (warning) process.stderr.write(`${warning}\n`);
  };

  function token(): string {
    const t = opts.token || process.env.SIMHOST_TOKEN || loadCredential(base)?.token;
    if (!t) throw new CliError(`Not logged in to ${base}: run \`simhost login\` (or pass --token / SIMHOST_TOKEN).`);
    return t;
  }

  const client = (withToken: boolean): TypedClient => {
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.org) headers["x-organization-id"] = opts.org;
    const c = createClient<paths, Json>({ baseUrl: base, headers, redirect: "manual" });
    c.use({
      onRequest: ({ request }) => {
        if (withToken || new URL(request.url).pathname.startsWith("/api/auth/")) warnIfPlain();
        if (withToken) request.headers.set("authorization", `Bearer ${token()}`);
        return new Request(request, { signal: AbortSignal.timeout(requestTimeoutMs(request.url)) });
      },
      onError: ({ error }) => new CliError(`Could not reach ${base}: ${(error as Error).message}`),
    });
    return c;
  };

  /**
   * Server text as a person reads it: without --json every string of an answer goes through
   * `printable` before any command renders it (with --json, JSON's own escapes do the same).
   */
  const forPrinting = <T>(value: T): T => (opts.json ? value : printableDeep(value));

  /** The answer's body as sent, for values sent back to the server (a read before an update); `ok` for anything printed. */
  async function okAsSent<D>(pending: Promise<Outcome<D>>, okStatuses: number[] = []): Promise<D> {
    const { data, error, response } = await pending;
    if (response.ok) return data as D;
    if (okStatuses.includes(response.status)) return error as D;
    const message = (error as Partial<ApiErrorBody> | undefined)?.message;
    const url = new URL(response.url || base);
    throw new CliError(typeof message === "string" ? printable(message) : `${url.pathname} answered HTTP ${response.status}.`);
  }

  /** The answer's body, ready to print (`forPrinting`); a non-2xx answer (other than `okStatuses`) throws a CliError carrying the API's `message`. */
  const ok = async <D>(pending: Promise<Outcome<D>>, okStatuses: number[] = []): Promise<D> => forPrinting(await okAsSent(pending, okStatuses));

  return Object.assign(client(true), { url: base, anonymous: client(false), ok, okAsSent, forPrinting });
}

export type ApiClient = ReturnType<typeof createApiClient>;
