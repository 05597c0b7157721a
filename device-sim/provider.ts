import { createRandom, type Random } from "./random";
import { providerSignature } from "./signature";

/**
 * The emulated SMS provider. Inbound: phones "send" SMS to it (POST /sms) and it calls the
 * server's signed callback, like the real provider does. Outbound: it implements the
 * provider API of docs/api-notes.md (POST /messages) and records what the server sent.
 */
export type ProviderOptions = {
  port: number;
  hostname?: string;
  /** Where the server is reached. */
  serverUrl: string;
  /** The server's PUBLIC_URL: the signature covers the URL as the server believes it was called. */
  publicUrl?: string;
  authToken: string;
  providerNumber: string;
  accountSid?: string;
  /** Share of outbound API calls answered 503, to exercise the server's retries. */
  failRate?: number;
  /** Share of accepted outbound messages the network does not deliver (status callback `undelivered`, error 30003). */
  undeliveredRate?: number;
  /** Delay before each status callback (ms); default 50. */
  callbackDelayMs?: number;
  seed?: number;
};

export type InboundSms = { from: string; to: string; body: string };
export type ForwardResult = { sid: string; status: number; body: string };
export type SentSms = { sid: string; from: string; to: string; body: string; status_callback?: string; created_at: string };
/** A status callback the emulator made, and how the server answered it (0: not reached). */
export type StatusCallback = { sid: string; status: string; url: string; answered: number };

export type CallbackTarget = { serverUrl: string; publicUrl?: string; authToken: string; accountSid: string };

export const E164 = /^\+[1-9]\d{6,14}$/;
export const defaultAccountSid = `AC${"5".repeat(32)}`;

/** Calls POST /api/provider/sms as the provider would; retries while the server is away, as providers do. */
export async function forwardToServer(target: CallbackTarget, sms: InboundSms, sid: string, attempts = 3): Promise<ForwardResult> {
  const params = { From: sms.from, To: sms.to, Body: sms.body, MessageSid: sid, AccountSid: target.accountSid };
  return { sid, ...(await postSigned(target, "/api/provider/sms", params, attempts)) };
}

/**
 * A signed form POST to one of the server's callback paths: signed over the URL as the server
 * believes it was called (its PUBLIC_URL), sent where it is reached. Retried on 5xx and network
 * errors; `status` 0 when it was never reached.
 */
async function postSigned(
  target: CallbackTarget,
  pathAndQuery: string,
  params: Record<string, string>,
  attempts = 3,
): Promise<{ status: number; body: string }> {
  const base = (url: string) => url.replace(/\/+$/, "");
  const signature = providerSignature(target.authToken, `${base(target.publicUrl ?? target.serverUrl)}${pathAndQuery}`, params);
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${base(target.serverUrl)}${pathAndQuery}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-provider-signature": signature },
        body: new URLSearchParams(params).toString(),
        signal: AbortSignal.timeout(10_000),
      });
      const body = await res.text();
      if (res.status < 500 || attempt >= attempts) return { status: res.status, body };
    } catch (e) {
      if (attempt >= attempts) return { status: 0, body: (e as Error).message };
    }
    await Bun.sleep(250 * 2 ** attempt);
  }
}

export function startProvider(opts: ProviderOptions) {
  const rng: Random = createRandom(opts.seed ?? 1);
  const target: CallbackTarget = {
    serverUrl: opts.serverUrl,
    publicUrl: opts.publicUrl,
    authToken: opts.authToken,
    accountSid: opts.accountSid ?? defaultAccountSid,
  };
  const forwarded: (InboundSms & ForwardResult & { created_at: string })[] = [];
  const sent: SentSms[] = [];
  const callbacks: StatusCallback[] = [];
  // Unique on every run, whatever the seed: the server drops a message whose id it has seen, so a
  // fleet run again with the same seed (its phones resumed) must not send the last run's ids. The
  // seed repeats what it decides (failures, delivery outcomes), not the ids.
  const sid = () => `SM${crypto.randomUUID().replaceAll("-", "")}`;

  async function receive(req: Request) {
    const sms = (await req.json().catch(() => null)) as InboundSms | null;
    if (!sms || !E164.test(sms.from ?? "") || typeof sms.to !== "string" || typeof sms.body !== "string") {
      return Response.json({ message: "Send JSON { from (E.164), to, body }.", code: "validation_failed" }, { status: 422 });
    }
    const result = await forwardToServer(target, sms, sid());
    forwarded.push({ ...sms, ...result, created_at: new Date().toISOString() });
    // The phone's send succeeded once the provider has it; the callback outcome is for QA.
    return Response.json({ sid: result.sid, callback_status: result.status }, { status: result.status >= 200 && result.status < 300 ? 201 : 502 });
  }

  const byKey = new Map<string, SentSms>();
  async function acceptOutbound(req: Request) {
    if (req.headers.get("authorization") !== `Bearer ${opts.authToken}`) {
      return Response.json({ message: "Bad provider credentials.", code: "unauthenticated" }, { status: 401 });
    }
    if (opts.failRate && rng.chance(opts.failRate)) return Response.json({ message: "Provider busy.", code: "unavailable" }, { status: 503 });
    const msg = (await req.json().catch(() => null)) as Omit<SentSms, "sid" | "created_at"> | null;
    if (!msg || !E164.test(msg.from ?? "") || !E164.test(msg.to ?? "") || typeof msg.body !== "string" || msg.body.length < 1 || msg.body.length > 1600) {
      return Response.json({ message: "Send JSON { from, to (E.164), body (1..1600) }.", code: "validation_failed" }, { status: 422 });
    }
    // A request again under an Idempotency-Key already seen (the server retrying after a timeout
    // whose request got through) answers what the first did and sends nothing more.
    const key = req.headers.get("idempotency-key");
    const seen = key ? byKey.get(key) : undefined;
    if (seen) return Response.json({ sid: seen.sid, status: "queued" }, { status: 201 });
    const record: SentSms = {
      sid: sid(),
      from: msg.from,
      to: msg.to,
      body: msg.body,
      status_callback: msg.status_callback,
      created_at: new Date().toISOString(),
    };
    sent.push(record);
    if (key) byKey.set(key, record);
    if (record.status_callback) {
      const outcome = opts.undeliveredRate && rng.chance(opts.undeliveredRate) ? UNDELIVERED : DELIVERED;
      void reportStatuses(target, record, outcome, opts.callbackDelayMs ?? 50).then((made) => callbacks.push(...made));
    }
    return Response.json({ sid: record.sid, status: "queued" }, { status: 201 });
  }

  const server = Bun.serve({
    port: opts.port,
    hostname: opts.hostname ?? "127.0.0.1",
    routes: {
      "/health": () => Response.json({ status: "ok", provider_number: opts.providerNumber }),
      "/sms": { POST: receive, GET: () => Response.json({ data: forwarded }) },
      "/messages": { POST: acceptOutbound, GET: () => Response.json({ data: sent }) },
      "/callbacks": { GET: () => Response.json({ data: callbacks }) },
    },
    fetch: () => Response.json({ message: "No such route.", code: "not_found" }, { status: 404 }),
  });
  return { url: `http://${server.hostname}:${server.port}`, port: server.port as number, sent, forwarded, callbacks, stop: () => server.stop(true) };
}
export type Provider = ReturnType<typeof startProvider>;

/** The statuses the provider reports for a message, in order, with the error fields of a failure. */
type Outcome = { status: string; fields?: Record<string, string> }[];
const DELIVERED: Outcome = [{ status: "sent" }, { status: "delivered" }];
const UNDELIVERED: Outcome = [{ status: "sent" }, { status: "undelivered", fields: { ErrorCode: "30003", ErrorMessage: "Unreachable destination handset" } }];

/**
 * Status callbacks to the status_callback the server gave (MessageStatus sent, then delivered or
 * undelivered with ErrorCode), signed like the inbound callback, each retried while the server is
 * away (5xx or unreachable), as providers do. The server's PUBLIC_URL is expected to be the base of
 * the URL it gave.
 */
async function reportStatuses(target: CallbackTarget, sms: SentSms, outcome: Outcome, delayMs: number): Promise<StatusCallback[]> {
  const made: StatusCallback[] = [];
  for (const step of outcome) {
    await Bun.sleep(delayMs);
    const params = { MessageSid: sms.sid, MessageStatus: step.status, From: sms.from, To: sms.to, AccountSid: target.accountSid, ...step.fields };
    // The server names its own URL; it is reached where the emulator reaches it, signed as the server believes it was called.
    const { pathname, search } = new URL(sms.status_callback!);
    const answer = await postSigned(target, `${pathname}${search}`, params);
    made.push({ sid: sms.sid, status: step.status, url: sms.status_callback!, answered: answer.status });
  }
  return made;
}

/** The phone side: "send" an SMS through a running emulator. */
export async function sendThroughProvider(providerUrl: string, sms: InboundSms): Promise<{ sid: string; callback_status: number }> {
  const res = await fetch(`${providerUrl.replace(/\/+$/, "")}/sms`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(sms),
    signal: AbortSignal.timeout(30_000),
  });
  const json = (await res.json().catch(() => ({}))) as { sid?: string; callback_status?: number; message?: string };
  if (!res.ok) {
    // Without a callback status the provider refused the SMS itself (e.g. a sender not in E.164); with one, the server's callback failed.
    const why =
      json.callback_status === undefined
        ? `it refused the SMS from ${sms.from} to ${sms.to}: ${json.message ?? "no reason given"}`
        : `the server's callback answered ${json.callback_status || "nothing (not reached)"}`;
    throw new Error(`provider answered ${res.status}: ${why}`);
  }
  return { sid: json.sid!, callback_status: json.callback_status! };
}
