import { loadCredential } from "./credentials";
import { CliError, type GlobalOptions } from "./output";

export const DEFAULT_URL = "http://localhost:3000";

export type ApiResponse<T = any> = { status: number; body: T };
type RequestOptions = { body?: unknown; query?: Record<string, string | number | boolean | undefined>; auth?: boolean; okStatuses?: number[] };

export function serverUrl(opts: GlobalOptions): string {
  return (opts.url || process.env.SIMHOST_URL || DEFAULT_URL).replace(/\/+$/, "");
}

/**
 * The CLI's HTTP client. Token: --token, else SIMHOST_TOKEN, else the one `simhost login` saved
 * for this server. Non-2xx answers throw a CliError carrying the API's `message`.
 */
export function createApiClient(opts: GlobalOptions) {
  const base = serverUrl(opts);

  function token(): string {
    const t = opts.token || process.env.SIMHOST_TOKEN || loadCredential(base)?.token;
    if (!t) throw new CliError(`Not logged in to ${base}: run \`simhost login\` (or pass --token / SIMHOST_TOKEN).`);
    return t;
  }

  async function request<T = any>(method: string, path: string, ro: RequestOptions = {}): Promise<ApiResponse<T>> {
    const url = new URL(`${base}${path}`);
    for (const [k, v] of Object.entries(ro.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json" };
    if (ro.auth !== false) headers.authorization = `Bearer ${token()}`;
    if (opts.org) headers["x-organization-id"] = opts.org;
    if (ro.body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: ro.body === undefined ? undefined : JSON.stringify(ro.body), redirect: "manual" });
    } catch (e) {
      throw new CliError(`Could not reach ${base}: ${(e as Error).message}`);
    }
    const text = await res.text();
    let body: any = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    if (!res.ok && !ro.okStatuses?.includes(res.status)) {
      const message = typeof body?.message === "string" ? body.message : `${method} ${path} answered HTTP ${res.status}.`;
      throw new CliError(message);
    }
    return { status: res.status, body };
  }

  return {
    url: base,
    request,
    get: <T = any>(path: string, ro?: RequestOptions) => request<T>("GET", path, ro),
    post: <T = any>(path: string, body?: unknown, ro?: RequestOptions) => request<T>("POST", path, { ...ro, body }),
    patch: <T = any>(path: string, body?: unknown, ro?: RequestOptions) => request<T>("PATCH", path, { ...ro, body }),
    delete: <T = any>(path: string, ro?: RequestOptions) => request<T>("DELETE", path, ro),
  };
}

export type ApiClient = ReturnType<typeof createApiClient>;
