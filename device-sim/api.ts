import createClient, { type Client } from "openapi-fetch";
import type { ApiAnswer, ApiBody, ApiErrorBody, ApiQuery, Json, paths } from "../clients/api";
import type { ReceivedSms } from "./outbox";
import type { Stats } from "./stats";

/** The device as the API shows it (GET /api/byos/devices/{device}); register answers its own shape. */
export type Device = ApiAnswer<"/api/byos/devices/{device}", "get">["data"] | ApiAnswer<"/api/byos/devices/register", "post">;
export type SimCard = Device["sim_cards"][number];
export type RegisterRequest = ApiBody<"/api/byos/devices/register", "post">;
export type ConnectionDetails = ApiAnswer<"/api/broadcasting/connection", "get">;
/** The hosted SIM of a verified card; a card as register answers it has none yet. */
export const hostedSimOf = (card: SimCard): number | null => ("hosted_sim_id" in card ? (card.hosted_sim_id ?? null) : null);
/** API.md §1: a 409 device_already_registered also names the device (not in the document's Error schema). */
export type ErrorAnswer = ApiErrorBody & { device_id?: number };

/** A failed call. `status` 0 means the server was not reached (refused, reset, timed out). */
export class ApiError extends Error {
  constructor(
    readonly operation: string,
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body?: ErrorAnswer,
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

type Outcome<D> = { data?: D; error?: unknown; response: Response };

/**
 * The companion app's HTTP client, typed from the OpenAPI document (openapi-fetch). Bun's fetch
 * keeps connections alive and pools them per origin, so every device of a fleet shares the same
 * few sockets.
 */
export function createApi(opts: ApiOptions) {
  const baseUrl = opts.baseUrl.replace(/\/+$/, "");
  let token = opts.token;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const limit = opts.limiter ?? ((fn) => fn());
  const client: Client<paths, Json> = createClient<paths, Json>({
    baseUrl,
    headers: { accept: "application/json" },
    fetch: (request) => limit(() => fetch(request, { signal: AbortSignal.timeout(timeoutMs) })),
  });
  client.use({
    onRequest: ({ request }) => {
      if (token) request.headers.set("authorization", `Bearer ${token}`);
    },
  });

  /** `expected` error codes are answers the caller handles (a re-run meeting its own device), not errors of the run. */
  async function call<D>(operation: string, pending: () => Promise<Outcome<D>>, expected: string[] = []): Promise<D> {
    const started = performance.now();
    try {
      const { data, error, response } = await pending();
      opts.stats?.observe(operation, performance.now() - started);
      if (!response.ok) {
        const err = error && typeof error === "object" ? (error as ErrorAnswer) : undefined;
        throw new ApiError(operation, response.status, err?.code ?? "http_error", err?.message ?? `HTTP ${response.status}`, err);
      }
      return data as D;
    } catch (e) {
      // Named with the server it did not reach: "ECONNREFUSED: Unable to connect" alone did not say which.
      const error = e instanceof ApiError ? e : new ApiError(operation, 0, "network", `Could not reach ${baseUrl}: ${(e as Error).message}`);
      if (!expected.includes(error.code)) opts.stats?.error(operation, error.kind);
      throw error;
    }
  }

  const device = (id: number) => ({ path: { device: id } });
  return {
    baseUrl,
    setToken: (t: string) => void (token = t),
    token: () => token,
    login: (email: string, password: string) => call("login", () => client.POST("/api/auth/login", { body: { email, password } })),
    verify2fa: (tmp_token: string, code: string) => call("2fa", () => client.POST("/api/auth/2fa/verify", { body: { tmp_token, code } })),
    // A cast: openapi-fetch drops the register cards' always-null `phone_number` from its answer type.
    register: (body: RegisterRequest) =>
      call("register", () => client.POST("/api/byos/devices/register", { body }), ["device_already_registered"]) as Promise<Device>,
    getDevice: async (id: number): Promise<Device> => (await call("device", () => client.GET("/api/byos/devices/{device}", { params: device(id) }))).data,
    listDevices: (query: ApiQuery<"/api/byos/devices", "get"> = {}) =>
      // The list route documents no response schema yet: its items are the show route's device.
      call("devices", () => client.GET("/api/byos/devices", { params: { query } })) as Promise<unknown> as Promise<{ data: Device[] }>,
    revoke: (id: number) => call("revoke", () => client.DELETE("/api/byos/devices/{device}", { params: device(id) })),
    config: (id: number) => call("config", () => client.GET("/api/byos/devices/{device}/config", { params: device(id) })),
    heartbeat: (id: number, body: ApiBody<"/api/byos/devices/{device}/heartbeat", "post">) =>
      call("heartbeat", () => client.POST("/api/byos/devices/{device}/heartbeat", { params: device(id), body })),
    submitSms: (id: number, sms: ReceivedSms) => call("sms", () => client.POST("/api/byos/devices/{device}/sms", { params: device(id), body: sms })),
    reissueCode: async (id: number, sim: number) =>
      (await call("reissue", () => client.POST("/api/byos/devices/{device}/sims/{simCard}/reissue-code", { params: { path: { device: id, simCard: sim } } })))
        .data,
    reportStatus: (id: number, message: number, status: "sending" | "sent" | "delivered" | "failed", error?: string) =>
      call("status", () =>
        client.POST("/api/byos/devices/{device}/messages/{message}/status", {
          params: { path: { device: id, message } },
          body: error ? { status, error } : { status },
        }),
      ),
    /** POST /api/messages with an Idempotency-Key: a retry after a lost answer sends nothing twice. */
    sendMessage: (body: ApiBody<"/api/messages", "post">, idempotencyKey: string) =>
      call("send", () => client.POST("/api/messages", { body, params: { header: { "Idempotency-Key": idempotencyKey } } })),
    /** PUT /api/sending-policy: the organization's default per-SIM pacing (docs/sending.md). */
    setSendingPolicy: (body: ApiBody<"/api/sending-policy", "put">) => call("sending_policy", () => client.PUT("/api/sending-policy", { body })),
    message: async (id: number) => (await call("message", () => client.GET("/api/messages/{id}", { params: { path: { id } } }))).data,
    messages: (query: { hosted_sim: number; per_page?: number; page?: number; direction?: "inbound" | "outbound" }) =>
      call("messages", () => client.GET("/api/messages", { params: { query } })),
    connection: () => call("connection", () => client.GET("/api/broadcasting/connection")),
    /** GET /api/events: the durable log after a cursor ("now": where it ends), what a reconnecting client catches up from. */
    events: (query: ApiQuery<"/api/events", "get">) => call("events", () => client.GET("/api/events", { params: { query } })),
    authorizeChannel: (socket_id: string, channel_name: string) =>
      call("channel_auth", () => client.POST("/api/broadcasting/auth", { body: { socket_id, channel_name } })),
  };
}
export type Api = ReturnType<typeof createApi>;

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
