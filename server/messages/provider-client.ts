import { readCapped } from "../lib/capped-body";
import { storableText } from "../lib/fields";

/** Outcome of one send attempt through the provider API (docs/api-notes.md "Outbound provider API"). */
export type ProviderOutcome =
  | { kind: "accepted"; sid: string; status: string }
  | { kind: "rejected"; error: string }
  /** `unknown`: no answer came (the connection failed or timed out): the provider may have taken it. */
  | { kind: "retry"; error: string; retryAfterMs?: number; unknown?: true };

/** `id`: our message id, which names the message in the status callback URL the provider is given. */
export type ProviderClient = { send(message: { id: number; from: string; to: string; body: string }): Promise<ProviderOutcome> };

/**
 * Where the provider reports a message's delivery (server/provider/routes.ts): a URL per
 * message, so a report finds its message even before the send job recorded the provider's sid,
 * and signed whole by the provider, so the id in it cannot be forged.
 */
export const statusCallbackUrl = (publicUrl: string, messageId: number) => `${publicUrl.replace(/\/+$/, "")}/api/provider/messages/${messageId}/status`;

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, 600_000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - Date.now()), 600_000);
}

/** The most of an answer read: an acceptance or an error is a small JSON object; the rest is dropped unread. */
const ANSWER_BYTES = 16 * 1024;
/**
 * A provider's message id, as our callbacks take it too (server/provider/routes.ts): letters and
 * digits, up to 64. Anything else in an acceptance is not kept (a NUL in it failed the status's
 * write after the provider had taken the SMS, and every retry of the job sent it again).
 */
export const isProviderSid = (sid: unknown): sid is string => typeof sid === "string" && /^[A-Za-z0-9]{1,64}$/.test(sid);

const readJson = async (res: Response): Promise<Record<string, unknown>> => {
  try {
    const body = JSON.parse(await readCapped(res, ANSWER_BYTES));
    return body && typeof body === "object" ? body : {};
  } catch {
    return {};
  }
};

async function describe(res: Response): Promise<string> {
  // Parsed whole (up to ANSWER_BYTES), its reason then cut: cut first, a longer answer (a
  // provider's error with details) was no JSON any more and lost its reason.
  const text = await readCapped(res, ANSWER_BYTES).catch(() => "");
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: unknown };
    const reason = body.message ?? body.error;
    // The status's write failed on a NUL, after the provider had taken the SMS.
    if (typeof reason === "string") return `provider answered ${res.status}: ${storableText(reason).slice(0, 300)}`;
  } catch {
    // not JSON: the status alone says enough
  }
  return `provider answered ${res.status}`;
}

/**
 * `POST {baseUrl}/messages` with the provider's Bearer token, and with `publicUrl` the message's
 * `status_callback`. 2xx is accepted; 429, 5xx and
 * network errors or timeouts are worth retrying; any other 4xx is a permanent refusal.
 */
export function createProviderClient(opts: { baseUrl: string; authToken: string; publicUrl?: string; timeoutMs?: number }): ProviderClient {
  const url = `${opts.baseUrl.replace(/\/+$/, "")}/messages`;
  return {
    async send({ id, ...message }) {
      const callback = opts.publicUrl ? { status_callback: statusCallbackUrl(opts.publicUrl, id) } : {};
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          // The same key on every attempt of a message: a provider that keeps keys answers a retry
          // whose first attempt got through (a timeout) without sending it again.
          headers: { "content-type": "application/json", authorization: `Bearer ${opts.authToken}`, "idempotency-key": `simhost-message-${id}` },
          body: JSON.stringify({ ...message, ...callback }),
          signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
          redirect: "manual",
        });
      } catch (e) {
        return { kind: "retry", error: `provider unreachable: ${(e as Error).name === "TimeoutError" ? "timed out" : "connection failed"}`, unknown: true };
      }
      if (res.status >= 200 && res.status < 300) {
        const body = await readJson(res);
        const sid = isProviderSid(body.sid) ? body.sid : "";
        return { kind: "accepted", sid, status: typeof body.status === "string" ? body.status : "queued" };
      }
      const error = await describe(res);
      if (res.status === 429 || res.status >= 500) return { kind: "retry", error, retryAfterMs: retryAfterMs(res.headers.get("retry-after")) };
      return { kind: "rejected", error };
    },
  };
}
