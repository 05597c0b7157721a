import type { ReceivedSms } from "./outbox";
import type { Stats } from "./stats";
import type {
  ApiErrorBody,
  ConnectionDetails,
  Device,
  DeviceConfig,
  HeartbeatRequest,
  HeartbeatResponse,
  LoginResult,
  Message,
  Page,
  RegisterRequest,
  SimCard,
} from "./wire";

/** A failed call. `status` 0 means the server was not reached (refused, reset, timed out). */
export class ApiError extends Error {
  constructor(
    readonly operation: string,
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body?: ApiErrorBody,
  ) {
    super(message);
  }
  /** Worth trying again later: the server was away, overloaded or asked us to wait. */
  get retryable() {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
  /** "503 unavailable", "network": how errors are grouped in a report. */
  get kind() {
    return this.status === 0 ? this.code : `${this.status} ${this.code}`;
  }
}

/** Caps requests in flight so thousands of devices queue politely instead of opening thousands of sockets. */
export function createLimiter(max: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async function run<T>(fn: () => Promise<T>): Promise<T> {
    if (active >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}
export type Limiter = ReturnType<typeof createLimiter>;

export type ApiOptions = { baseUrl: string; token?: string; stats?: Stats; limiter?: Limiter; timeoutMs?: number };

// Register answers the SPEC.md 4.2 shape; tolerate a { data } envelope around it as well.
const unwrap = <T>(json: any): T => (json && typeof json === "object" && "data" in json && !("id" in json) ? json.data : json);

/**
 * The companion app's HTTP client. Bun's fetch keeps connections alive and pools them per
 * origin, so every device of a fleet shares the same few sockets.
 */
export function createApi(opts: ApiOptions) {
  const baseUrl = opts.baseUrl.replace(/\/+$/, "");
  let token = opts.token;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const limit = opts.limiter ?? ((fn) => fn());

  /** `expected` error codes are answers the caller handles (a re-run meeting its own device), not errors of the run. */
  async function call<T>(operation: string, method: string, path: string, body?: unknown, expected: string[] = []): Promise<T> {
    const started = performance.now();
    try {
      const res = await limit(() => send(method, path, body));
      const text = await res.text();
      const json = text ? safeJson(text) : null;
      opts.stats?.observe(operation, performance.now() - started);
      if (!res.ok) {
        const err = json as ApiErrorBody | null;
        throw new ApiError(operation, res.status, err?.code ?? "http_error", err?.message ?? `HTTP ${res.status}`, err ?? undefined);
      }
      return json as T;
    } catch (e) {
      const error = e instanceof ApiError ? e : new ApiError(operation, 0, "network", (e as Error).message);
      if (!expected.includes(error.code)) opts.stats?.error(operation, error.kind);
      throw error;
    }
  }

  function send(method: string, path: string, body?: unknown) {
    const headers: Record<string, string> = { accept: "application/json" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) };
    return fetch(`${baseUrl}${path}`, init);
  }

  const dev = (id: number) => `/api/byos/devices/${id}`;
  return {
    baseUrl,
    setToken: (t: string) => void (token = t),
    token: () => token,
    login: (email: string, password: string) => call<LoginResult>("login", "POST", "/api/auth/login", { email, password }),
    verify2fa: (tmp_token: string, code: string) => call<{ token: string }>("2fa", "POST", "/api/auth/2fa/verify", { tmp_token, code }),
    register: async (req: RegisterRequest) => unwrap<Device>(await call("register", "POST", "/api/byos/devices/register", req, ["device_already_registered"])),
    getDevice: async (id: number) => unwrap<Device>(await call("device", "GET", dev(id))),
    listDevices: (query: { status?: string; per_page?: number; page?: number } = {}) => call<Page<Device>>("devices", "GET", `/api/byos/devices?${qs(query)}`),
    revoke: (id: number) => call<null>("revoke", "DELETE", dev(id)),
    config: (id: number) => call<DeviceConfig>("config", "GET", `${dev(id)}/config`),
    heartbeat: (id: number, body: HeartbeatRequest) => call<HeartbeatResponse>("heartbeat", "POST", `${dev(id)}/heartbeat`, body),
    submitSms: (id: number, sms: ReceivedSms) => call<{ message: string; message_id: string }>("sms", "POST", `${dev(id)}/sms`, sms),
    reissueCode: async (id: number, sim: number) => unwrap<SimCard>(await call("reissue", "POST", `${dev(id)}/sims/${sim}/reissue-code`)),
    reportStatus: (id: number, message: number, status: "sent" | "delivered" | "failed", error?: string) =>
      call<unknown>("status", "POST", `${dev(id)}/messages/${message}/status`, error ? { status, error } : { status }),
    messages: (query: { hosted_sim: number; per_page?: number; page?: number; direction?: string }) =>
      call<Page<Message>>("messages", "GET", `/api/messages?${qs(query)}`),
    connection: () => call<ConnectionDetails>("connection", "GET", "/api/broadcasting/connection"),
  };
}
export type Api = ReturnType<typeof createApi>;

function qs(query: Record<string, string | number | undefined>) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) p.set(k, String(v));
  return p.toString();
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export type Credentials = { email: string; password: string; totpSecret?: string };

/** Login as the app does it: email and password, then a TOTP code when the account asks for one. */
export async function signIn(api: Api, creds: Credentials): Promise<string> {
  const first = await api.login(creds.email, creds.password);
  if ("token" in first) {
    api.setToken(first.token);
    return first.token;
  }
  if (!creds.totpSecret) throw new ApiError("2fa", 401, "2fa_required", `${creds.email} has two-factor authentication on; pass --totp-secret`);
  const { generateSync } = await import("otplib");
  const verified = await api.verify2fa(first.tmp_token, generateSync({ secret: creds.totpSecret }));
  api.setToken(verified.token);
  return verified.token;
}
