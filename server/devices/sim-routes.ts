import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import type { Services } from "../services";
import { updateSimCard } from "./management";
import { presentIssuedSimCard, presentSimCard } from "./present";
import { addSimCard, reissueCode } from "./registration";
import { deviceChannels } from "./runtime";
import { AddSimCard, DeviceParams, IssuedSimCard, SimCard, SimCardParams, UpdateSimCard } from "./schema";

type Deps = Pick<Services, "auth" | "sql" | "clock" | "config" | "devices" | "publish">;
const tags = ["BYOS devices"];

/** SIM cards of a device: add (with a code), update, reissue the code. Serialised on the device's actor. */
export function simCardRoutes(services: Deps) {
  const { actors } = services.devices;
  const codes = { sql: services.sql, clock: services.clock };
  const management = { sql: services.sql, actors, publish: services.publish };
  const provider = services.config.PROVIDER_NUMBER;

  return new Elysia()
    .use(callerPlugin(services.auth))
    .post(
      "/api/byos/devices/:device/sims",
      async ({ caller, params, body, set }) => {
        const c = await caller({ apiKey: "session_only" });
        const state = await actors.require(params.device, c.organization.id);
        const card = await actors.run(state, () => addSimCard(codes, c.organization.id, params.device, body.sim_slot));
        services.publish(`private-device.${state.id}`, "config.changed", { device_id: state.id });
        services.publish(deviceChannels(state), "device.updated", { device_id: state.id });
        set.status = 201;
        return { data: presentIssuedSimCard(card, provider) };
      },
      { params: DeviceParams, body: AddSimCard, response: { 201: Type.Object({ data: IssuedSimCard }) }, detail: { tags, summary: "Add a SIM card" } },
    )
    .patch(
      "/api/byos/devices/:device/sims/:simCard",
      async ({ caller, params, body }) => {
        const c = await caller({ apiKey: "session_only" });
        return { data: presentSimCard(await updateSimCard(management, c.organization.id, params.device, params.simCard, body)) };
      },
      { params: SimCardParams, body: UpdateSimCard, response: { 200: Type.Object({ data: SimCard }) }, detail: { tags, summary: "Update a SIM card" } },
    )
    .post(
      "/api/byos/devices/:device/sims/:simCard/reissue-code",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "session_only" });
        const state = await actors.require(params.device, c.organization.id);
        const card = await actors.run(state, () => reissueCode(codes, c.organization.id, params.device, params.simCard));
        return { data: presentIssuedSimCard(card, provider) };
      },
      { params: SimCardParams, response: { 200: Type.Object({ data: IssuedSimCard }) }, detail: { tags, summary: "Reissue a verification code" } },
    );
}
