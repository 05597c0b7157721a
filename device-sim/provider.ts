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
  seed?: number;
};

export type InboundSms = { from: string; to: string; body: string };
export type ForwardResult = { sid: string; status: number; body: string };
export type SentSms = { sid: string; from: string; to: string; body: string; status_callback?: string; created_at: string };

export type CallbackTarget = { serverUrl: string; publicUrl?: string; authToken: string; accountSid: string };

const E164 = /^\+[1-9]\d{6,14}$/;
export const defaultAccountSid = `AC${"5".repeat(32)}`;

/** Calls POST /api/provider/sms as the provider would; retries while the server is away, as providers do. */
export async function forwardToServer(target: CallbackTarget, sms: InboundSms, sid: string, attempts = 3): Promise<ForwardResult> {
  const path = "/api/provider/sms";
  const params = { From: sms.from, To: sms.to, Body: sms.body, MessageSid: sid, AccountSid: target.accountSid };
  const signature = providerSignature(target.authToken, `${(target.publicUrl ?? target.serverUrl).replace(/\/+$/, "")}${path}`, params);
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${target.serverUrl.replace(/\/+$/, "")}${path}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-provider-signature": signature },
        body: new URLSearchParams(params).toString(),
        signal: AbortSignal.timeout(10_000),
      });
      const body = await res.text();
      if (res.status < 500 || attempt >= attempts) return { sid, status: res.status, body };
    } catch (e) {
      if (attempt >= attempts) return { sid, status: 0, body: (e as Error).message };
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
  const sid = () => `SM${rng.hex(32)}`;

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

  async function acceptOutbound(req: Request) {
    if (req.headers.get("authorization") !== `Bearer ${opts.authToken}`) {
      return Response.json({ message: "Bad provider credentials.", code: "unauthenticated" }, { status: 401 });
    }
    if (opts.failRate && rng.chance(opts.failRate)) return Response.json({ message: "Provider busy.", code: "unavailable" }, { status: 503 });
    const msg = (await req.json().catch(() => null)) as Omit<SentSms, "sid" | "created_at"> | null;
    if (!msg || !E164.test(msg.from ?? "") || !E164.test(msg.to ?? "") || typeof msg.body !== "string" || msg.body.length < 1 || msg.body.length > 1600) {
      return Response.json({ message: "Send JSON { from, to (E.164), body (1..1600) }.", code: "validation_failed" }, { status: 422 });
    }
    const record: SentSms = {
      sid: sid(),
      from: msg.from,
      to: msg.to,
      body: msg.body,
      status_callback: msg.status_callback,
      created_at: new Date().toISOString(),
    };
    sent.push(record);
    if (record.status_callback) void reportDelivered(target, record);
    return Response.json({ sid: record.sid, status: "queued" }, { status: 201 });
  }

  const server = Bun.serve({
    port: opts.port,
    hostname: opts.hostname ?? "127.0.0.1",
    routes: {
      "/health": () => Response.json({ status: "ok", provider_number: opts.providerNumber }),
      "/sms": { POST: receive, GET: () => Response.json({ data: forwarded }) },
      "/messages": { POST: acceptOutbound, GET: () => Response.json({ data: sent }) },
    },
    fetch: () => Response.json({ message: "No such route.", code: "not_found" }, { status: 404 }),
  });
  return { url: `http://${server.hostname}:${server.port}`, port: server.port as number, sent, forwarded, stop: () => server.stop(true) };
}
export type Provider = ReturnType<typeof startProvider>;

/** Delivery receipt to the status_callback the server gave, signed like the inbound callback. */
async function reportDelivered(target: CallbackTarget, sms: SentSms) {
  await Bun.sleep(50);
  const params = { MessageSid: sms.sid, MessageStatus: "delivered", From: sms.from, To: sms.to, AccountSid: target.accountSid };
  const signature = providerSignature(target.authToken, sms.status_callback!, params);
  await fetch(sms.status_callback!, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-provider-signature": signature },
    body: new URLSearchParams(params).toString(),
  }).catch(() => undefined);
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
  if (!res.ok) throw new Error(`provider answered ${res.status}: callback ${json.callback_status ?? "?"} ${json.message ?? ""}`.trim());
  return { sid: json.sid!, callback_status: json.callback_status! };
}
