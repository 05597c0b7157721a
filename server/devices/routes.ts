import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { paginate } from "../lib/pagination";
import type { Services } from "../services";
import { changeDeviceStatus, revokeDeviceById, updateDevice } from "./management";
import { presentDevice, presentDeviceDetail, presentIssuedSimCard } from "./present";
import { registerDevice } from "./registration";
import { relayRoutes } from "./relay-routes";
import { DeviceDetail, DeviceListQuery, DeviceParams, DeviceSummary, IssuedSimCard, RegisterDevice, UpdateDevice } from "./schema";
import { simCardRoutes } from "./sim-routes";
import { findDevice, listDevices, simCardsOf } from "./store";

type Deps = Pick<Services, "auth" | "sql" | "clock" | "config" | "devices" | "publish" | "jobs">;

const tags = ["BYOS devices"];
const Registered = Type.Object({
  ...DeviceSummary.properties,
  device_model: Type.String(),
  app_version: Type.String(),
  sim_cards: Type.Array(IssuedSimCard),
});

/** API.md §3 "BYOS devices": session or OAuth tokens of the device's organization, never API keys. */
export function deviceRoutes(services: Deps) {
  const { sql, config } = services;
  const management = { sql, actors: services.devices.actors, publish: services.publish };
  const detail = async (organizationId: number, id: number) => {
    const device = await findDevice(sql, organizationId, id);
    if (!device) throw notFound("Device");
    return presentDeviceDetail(device, await simCardsOf(sql, [id]), config.PROVIDER_NUMBER);
  };

  return new Elysia()
    .use(callerPlugin(services.auth))
    .get(
      "/api/byos/devices",
      async ({ caller, query, request }) => {
        const c = await caller({ apiKey: "session_only" });
        const perPage = query.per_page ?? 15;
        const page = query.page ?? 1;
        const { rows, total } = await listDevices(sql, c.organization.id, { status: query.status, limit: perPage, offset: (page - 1) * perPage });
        const cards = await simCardsOf(
          sql,
          rows.map((r) => r.id),
        );
        const data = rows.map((r) => presentDevice(r, cards, config.PROVIDER_NUMBER));
        return paginate({ data, total, page, perPage, url: request.url });
      },
      { query: DeviceListQuery, detail: { tags, summary: "List BYOS devices" } },
    )
    .post(
      "/api/byos/devices/register",
      async ({ caller, body, set }) => {
        const c = await caller({ apiKey: "session_only" });
        const { device, cards } = await registerDevice(services, { organizationId: c.organization.id, userId: c.user?.id ?? null }, body);
        const view = {
          ...presentDevice(device, [], config.PROVIDER_NUMBER),
          device_model: device.device_model,
          app_version: device.app_version,
          sim_cards: cards.map((card) => presentIssuedSimCard(card, config.PROVIDER_NUMBER)),
        };
        set.status = 201;
        // SPEC.md 4.2 lists the fields at the top level; API.md §0 wraps resources in data: both.
        return { ...view, data: view };
      },
      {
        body: RegisterDevice,
        response: { 201: Type.Object({ ...Registered.properties, data: Registered }) },
        detail: { tags, summary: "Register a BYOS device" },
      },
    )
    .get(
      "/api/byos/devices/:device",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "session_only" });
        return { data: await detail(c.organization.id, params.device) };
      },
      { params: DeviceParams, response: { 200: Type.Object({ data: DeviceDetail }) }, detail: { tags, summary: "Show a BYOS device" } },
    )
    .patch(
      "/api/byos/devices/:device",
      async ({ caller, params, body }) => {
        const c = await caller({ apiKey: "session_only" });
        await updateDevice(management, c.organization.id, params.device, body);
        return { data: await detail(c.organization.id, params.device) };
      },
      { params: DeviceParams, body: UpdateDevice, response: { 200: Type.Object({ data: DeviceDetail }) }, detail: { tags, summary: "Update a BYOS device" } },
    )
    .post(
      "/api/byos/devices/:device/disable",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "session_only" });
        await changeDeviceStatus(management, c.organization.id, params.device, "disable");
        return { data: await detail(c.organization.id, params.device) };
      },
      { params: DeviceParams, response: { 200: Type.Object({ data: DeviceDetail }) }, detail: { tags, summary: "Disable a BYOS device" } },
    )
    .post(
      "/api/byos/devices/:device/enable",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "session_only" });
        await changeDeviceStatus(management, c.organization.id, params.device, "enable");
        return { data: await detail(c.organization.id, params.device) };
      },
      { params: DeviceParams, response: { 200: Type.Object({ data: DeviceDetail }) }, detail: { tags, summary: "Enable a BYOS device" } },
    )
    .delete(
      "/api/byos/devices/:device",
      async ({ caller, params, set }) => {
        const c = await caller({ apiKey: "session_only", role: "admin" });
        await revokeDeviceById(management, c.organization.id, params.device);
        set.status = 204;
        return null;
      },
      { params: DeviceParams, detail: { tags, summary: "Revoke a BYOS device (final; admin or owner)" } },
    )
    .use(simCardRoutes(services))
    .use(relayRoutes(services));
}
