import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { ErrorBody } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import type { Services } from "../services";
import { deactivateSimCard, updateSimCard } from "./management";
import { presentClaimingSimCard, presentIssuedSimCard, presentSimCard } from "./present";
import { addSimCard, reissueCode } from "./registration";
import { AddSimCard, DeviceParams, IssuedSimCard, numberClaimAnswers, SimCard, SimCardParams, UpdateSimCard } from "./schema";

type Deps = Pick<Services, "auth" | "sql" | "clock" | "config" | "devices" | "events" | "bus" | "secrets">;
const tags = ["BYOS devices"];

/** SIM cards of a device: add (with a code), update, reissue the code. Serialised on the device's actor. */
export function simCardRoutes(services: Deps) {
  const { actors } = services.devices;
  const codes = { sql: services.sql, clock: services.clock };
  const management = {
    sql: services.sql,
    clock: services.clock,
    actors,
    bus: services.bus,
    events: services.events,
    providerNumber: services.config.PROVIDER_NUMBER,
  };
  const provider = services.config.PROVIDER_NUMBER;

  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .post(
      "/api/byos/devices/:device/sims",
      async ({ caller: c, params, body, set }) => {
        const state = await actors.require(params.device, c.organization.id);
        const card = await actors.run(state, () => addSimCard(codes, c.organization.id, params.device, body.sim_slot));
        services.events.notify();
        set.status = 201;
        return { data: presentIssuedSimCard(card, provider) };
      },
      {
        idempotent: true,
        auth: { apiKey: "session_only" },
        params: DeviceParams,
        body: AddSimCard,
        response: { 201: Type.Object({ data: IssuedSimCard }) },
        detail: { tags, summary: "Add a SIM card" },
      },
    )
    .patch(
      "/api/byos/devices/:device/sims/:simCard",
      async ({ caller: c, params, body }) => {
        const { card, issued } = await updateSimCard(management, c.organization.id, params.device, params.simCard, body);
        return { data: issued ? presentClaimingSimCard(card, provider) : presentSimCard(card) };
      },
      {
        auth: { apiKey: "session_only" },
        params: SimCardParams,
        body: UpdateSimCard,
        response: numberClaimAnswers(Type.Object({ data: SimCard })),
        detail: { tags, summary: "Update a SIM card (a new phone_number is only claimed until an SMS from it proves it)" },
      },
    )
    .post(
      "/api/byos/devices/:device/sims/:simCard/reissue-code",
      async ({ caller: c, params }) => {
        const state = await actors.require(params.device, c.organization.id);
        const card = await actors.run(state, () => reissueCode(codes, c.organization.id, params.device, params.simCard));
        return { data: presentIssuedSimCard(card, provider) };
      },
      {
        auth: { apiKey: "session_only" },
        params: SimCardParams,
        response: { 200: Type.Object({ data: IssuedSimCard }) },
        detail: { tags, summary: "Reissue a verification code (on an inactive card: starts its re-verification)" },
      },
    )
    .post(
      "/api/byos/devices/:device/sims/:simCard/deactivate",
      async ({ caller: c, params }) => {
        return { data: presentSimCard(await deactivateSimCard(management, c.organization.id, params.device, params.simCard)) };
      },
      {
        auth: { apiKey: "session_only" },
        params: SimCardParams,
        response: { 200: Type.Object({ data: SimCard }), 409: ErrorBody },
        detail: { tags, summary: "Deactivate a SIM card (its number stops receiving until a reissued code proves it again)" },
      },
    );
}
