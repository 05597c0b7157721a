import { Elysia, t } from "elysia";
import { findVerificationCode } from "../devices/codes";
import { verifySimCard } from "../devices/verification";
import { AppError, validationFailed } from "../errors";
import { storeInboundMessage } from "../messages/inbound";
import { findActiveHostedSimByNumber } from "../numbers/byos-store";
import { createVerificationThrottle } from "../numbers/verification-throttle";
import type { Services } from "../services";
import { type FormParams, isValidProviderSignature, parseForm } from "./signature";
import { recordProviderMessage } from "./store";

type Deps = Pick<Services, "sql" | "clock" | "config" | "devices" | "events" | "logger" | "jobs" | "metrics">;

const REQUIRED = ["From", "To", "Body", "MessageSid"] as const;
const xml = () => new Response("<Response/>", { status: 200, headers: { "content-type": "text/xml" } });

function requiredFields(params: FormParams) {
  const errors: Record<string, string[]> = {};
  const out: Record<string, string> = {};
  for (const name of REQUIRED) {
    const value = params[name];
    if (typeof value !== "string" || (name !== "Body" && value.length === 0)) errors[name] = ["is required"];
    else out[name] = value;
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return out as Record<(typeof REQUIRED)[number], string>;
}

/** API.md "Provider callback": signed form posts from the messaging provider. */
export function providerRoutes(services: Deps) {
  const { sql, config, logger } = services;
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
    if (stored) services.jobs.wake();
  }

  return new Elysia().post(
    "/api/provider/sms",
    async ({ request, body }) => {
      const params = parseForm(typeof body === "string" ? body : "");
      const { pathname, search } = new URL(request.url);
      if (
        !isValidProviderSignature(config.PROVIDER_AUTH_TOKEN, `${config.PUBLIC_URL}${pathname}${search}`, params, request.headers.get("x-provider-signature"))
      ) {
        throw new AppError(403, "invalid_signature", "The X-Provider-Signature header is missing or does not match the request.");
      }
      const f = requiredFields(params);
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
  );
}
