import { Elysia, t } from "elysia";
import { developmentProviderSettings } from "../config";
import { findVerificationCode } from "../devices/codes";
import { verifySimCard } from "../devices/verification";
import { AppError, notFound, validationFailed } from "../errors";
import { storableText } from "../lib/fields";
import { clientAddress, clientUrl } from "../lib/versions";
import { storeInboundMessage } from "../messages/inbound";
import { isProviderSid } from "../messages/provider-client";
import { type ProviderReport, reportProviderStatus } from "../messages/reports";
import { findActiveHostedSimByNumber } from "../numbers/byos-store";
import { createVerificationThrottle } from "../numbers/verification-throttle";
import type { Services } from "../services";
import { acceptsCallbackFrom, type FormParams, isValidProviderSignature, parseForm } from "./signature";
import { recordProviderMessage } from "./store";

type Deps = Pick<Services, "sql" | "clock" | "config" | "devices" | "events" | "logger" | "metrics">;
type Server = Parameters<typeof clientAddress>[0];

const REQUIRED = ["From", "To", "Body", "MessageSid"] as const;
const xml = () => new Response("<Response/>", { status: 200, headers: { "content-type": "text/xml" } });

/** From and To: a phone number or an alphanumeric sender id (11 characters), with room to spare. */
const MAX_ADDRESS_LENGTH = 64;

/**
 * The SMS callback's fields, bounded: the message id and the sender are keys of the rows they
 * write (provider_messages, the verification throttle), which PostgreSQL refused past about 2.7 kB
 * with a 500 that the provider's retries met again and again.
 */
function requiredFields(params: FormParams) {
  const errors: Record<string, string[]> = {};
  const out: Record<string, string> = {};
  for (const name of REQUIRED) {
    const value = params[name];
    if (typeof value !== "string" || (name !== "Body" && value.length === 0)) errors[name] = ["is required"];
    else if (name === "MessageSid" && !isProviderSid(value)) errors[name] = ["must be the provider's message id (letters and digits, up to 64)"];
    else if ((name === "From" || name === "To") && value.length > MAX_ADDRESS_LENGTH) errors[name] = [`must be at most ${MAX_ADDRESS_LENGTH} characters`];
    else out[name] = value;
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return out as Record<(typeof REQUIRED)[number], string>;
}

/** API.md "Provider callback": signed form posts from the messaging provider. */
export function providerRoutes(services: Deps) {
  const { sql, config, logger } = services;
  const developmentToken = Object.hasOwn(developmentProviderSettings(config), "PROVIDER_AUTH_TOKEN");
  const verification = {
    sql,
    clock: services.clock,
    actors: services.devices.actors,
    events: services.events,
    throttle: createVerificationThrottle({ sql, clock: services.clock, metrics: services.metrics }),
    providerNumber: config.PROVIDER_NUMBER,
  };

  async function inbound(f: Record<(typeof REQUIRED)[number], string>, hostedSimId: number) {
    const stored = await sql.begin(async (tx) => {
      if (!(await recordProviderMessage(tx, f.MessageSid, "inbound"))) return false;
      await storeInboundMessage(tx, {
        hostedSimId,
        from: f.From,
        text: f.Body,
        source: "provider",
        externalId: f.MessageSid,
        receivedAt: new Date(services.clock.now()),
      });
      return true;
    });
    if (stored) services.events.notify();
  }

  /**
   * The form of a callback, once its X-Provider-Signature is checked (nothing else is read before),
   * over the URL the provider called (`/api/v1/...` as called, not the path it is handled under).
   * Its values then lose any NUL (U+FFFD in its place): no text column holds one, and a refusal
   * would make the provider send the SMS again and again, never stored.
   */
  function signedForm(request: Request, body: unknown, server: Server): FormParams {
    if (!acceptsCallbackFrom(clientAddress(server, request), developmentToken)) {
      throw new AppError(
        403,
        "invalid_signature",
        "This server signs provider callbacks with the development PROVIDER_AUTH_TOKEN, which anyone can know: it takes them from this machine only.",
      );
    }
    const params = parseForm(typeof body === "string" ? body : "");
    const { pathname, search } = new URL(clientUrl(request));
    if (
      !isValidProviderSignature(config.PROVIDER_AUTH_TOKEN, `${config.PUBLIC_URL}${pathname}${search}`, params, request.headers.get("x-provider-signature"))
    ) {
      throw new AppError(403, "invalid_signature", "The X-Provider-Signature header is missing or does not match the request.");
    }
    return Object.fromEntries(Object.entries(params).map(([k, v]) => [k, Array.isArray(v) ? v.map(storableText) : storableText(v)]));
  }

  return new Elysia()
    .post(
      "/api/provider/sms",
      async ({ request, body, server }) => {
        const f = requiredFields(signedForm(request, body, server));
        if (f.To === config.PROVIDER_NUMBER) {
          const code = findVerificationCode(f.Body);
          const outcome = code
            ? await verifySimCard(verification, code, f.From, (tx) => recordProviderMessage(tx, f.MessageSid, "verification"))
            : (await recordProviderMessage(sql, f.MessageSid, "dropped")) && "no_code";
          logger.info({ sid: f.MessageSid, outcome }, "provider verification SMS");
          return xml();
        }
        const sim = await findActiveHostedSimByNumber(sql, f.To);
        if (sim) await inbound(f, sim.id);
        else if (await recordProviderMessage(sql, f.MessageSid, "dropped"))
          logger.info({ sid: f.MessageSid, to: f.To }, "provider SMS to an unknown number dropped");
        return xml();
      },
      {
        parse: "text",
        body: t.Optional(t.String()),
        detail: {
          tags: ["Provider"],
          summary: "Inbound SMS callback of the messaging provider (form data, X-Provider-Signature)",
          security: [],
        },
      },
    )
    .post(
      "/api/provider/messages/:id/status",
      async ({ request, body, params, server }) => {
        const form = signedForm(request, body, server);
        const report = statusReport(form, params.id);
        const applied = await reportProviderStatus(services, report);
        if (!applied) throw notFound("Message");
        logger.info({ message: report.messageId, sid: report.sid, status: report.status, outcome: applied.outcome }, "provider status callback");
        return xml();
      },
      {
        parse: "text",
        body: t.Optional(t.String()),
        // Read after the signature (as every field of a provider callback): a malformed id is then 404.
        params: t.Object({ id: t.String({ description: "the message id, as in the status_callback URL the server gave" }) }),
        detail: {
          tags: ["Provider"],
          summary: "Status callback of the messaging provider for a message it was handed (form data, X-Provider-Signature)",
          description:
            'The `status_callback` the server gives the provider with each pool-number send. Form fields MessageSid, MessageStatus (sent, delivered, undelivered, failed; others are accepted and ignored), optional ErrorCode and ErrorMessage; signed like the inbound callback (403 `invalid_signature` otherwise). A repeated or late status changes nothing (docs/api-notes.md "Delivery reports").',
          security: [],
        },
      },
    );
}

const MESSAGE_ID = /^[1-9][0-9]{0,15}$/;

/** A status callback's fields, checked after its signature; the message id comes from the signed URL. */
function statusReport(form: FormParams, id: string): ProviderReport {
  const field = (name: string) => (typeof form[name] === "string" ? (form[name] as string) : undefined);
  const errors: Record<string, string[]> = {};
  const sid = field("MessageSid");
  const status = field("MessageStatus");
  if (!sid || !isProviderSid(sid)) errors.MessageSid = ["is required: the provider's message id (letters and digits, up to 64)"];
  if (!status || status.length > 32) errors.MessageStatus = ["is required (up to 32 characters)"];
  if (!MESSAGE_ID.test(id)) throw notFound("Message");
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return {
    messageId: Number(id),
    sid: sid!,
    status: status!.toLowerCase(),
    errorCode: field("ErrorCode")?.slice(0, 32),
    errorMessage: field("ErrorMessage")?.slice(0, 500),
  };
}
