import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import { paginate } from "../lib/pagination";
import type { Services } from "../services";
import { changeDeviceStatus, revokeDeviceById, updateDevice } from "./management";
import { presentDeviceDetail, presentDeviceListItem, presentRegistered } from "./present";
import { registerDevice } from "./registration";
import { relayRoutes } from "./relay-routes";
import { DeviceDetail, DeviceListQuery, DevicePage, DeviceParams, numberClaimAnswers, RegisterDevice, RegisteredV1, UpdateDevice } from "./schema";
import { simCardRoutes } from "./sim-routes";
import { findDevice, listDevices, simCardsOf } from "./store";

type Deps = Pick<Services, "auth" | "sql" | "clock" | "config" | "devices" | "events" | "bus" | "jobs" | "secrets">;

const tags = ["BYOS devices"];

/** API.md §3 "BYOS devices": session or OAuth tokens of the device's organization, never API keys. */
export function deviceRoutes(services: Deps) {
  const { sql, config } = services;
  const management = {
    sql,
    clock: services.clock,
    actors: services.devices.actors,
    bus: services.bus,
    events: services.events,
    providerNumber: config.PROVIDER_NUMBER,
  };
  /** The device in the organization a write acted in, or in any organization a read spans. */
  const detail = async (organizationId: number | number[], id: number, claimedCardId: number | null = null) => {
    const device = await findDevice(sql, organizationId, id);
    if (!device) throw notFound("Device");
    return presentDeviceDetail(device, await simCardsOf(sql, [id]), config.PROVIDER_NUMBER, claimedCardId);
  };

  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/byos/devices",
      async ({ caller: c, query, request }) => {
        const perPage = query.per_page ?? 15;
        const page = query.page ?? 1;
        const { rows, total } = await listDevices(sql, c.readScope, { status: query.status, limit: perPage, offset: (page - 1) * perPage });
        const cards = await simCardsOf(
          sql,
          rows.map((r) => r.id),
        );
        const data = rows.map((r) => presentDeviceListItem(r, cards, config.PROVIDER_NUMBER));
        return paginate({ data, total, page, perPage, request });
      },
      {
        auth: { apiKey: "session_only" },
        query: DeviceListQuery,
        detail: {
          tags,
          summary: "List BYOS devices",
          description: "Devices of every organization you are a member of, each naming its organization; X-Organization-Id narrows to one.",
          responses: { 200: { description: "A page of devices", content: { "application/json": { schema: DevicePage as object } } } },
        },
      },
    )
    .post(
      "/api/byos/devices/register",
      async ({ caller: c, body, set }) => {
        const { device, cards } = await registerDevice(services, { organizationId: c.organization.id, userId: c.user?.id ?? null }, body);
        const view = presentRegistered(device, cards, config.PROVIDER_NUMBER);
        set.status = 201;
        // SPEC.md 4.2 lists the fields at the top level; `data` repeats them for v1 clients only (deprecated, gone in v2).
        return { ...view, data: view };
      },
      {
        idempotent: true,
        auth: { apiKey: "session_only" },
        body: RegisterDevice,
        response: { 201: RegisteredV1 },
        detail: { tags, summary: "Register a BYOS device" },
      },
    )
    .get(
      "/api/byos/devices/:device",
      async ({ caller: c, params }) => {
        return { data: await detail(c.readScope, params.device) };
      },
      {
        auth: { apiKey: "session_only" },
        params: DeviceParams,
        response: { 200: Type.Object({ data: DeviceDetail }) },
        detail: { tags, summary: "Show a BYOS device", description: "A device of any organization you are a member of (X-Organization-Id narrows to one)." },
      },
    )
    .patch(
      "/api/byos/devices/:device",
      async ({ caller: c, params, body }) => {
        const claimed = await updateDevice(management, c.organization.id, params.device, body);
        return { data: await detail(c.organization.id, params.device, claimed) };
      },
      {
        auth: { apiKey: "session_only" },
        params: DeviceParams,
        body: UpdateDevice,
        response: numberClaimAnswers(Type.Object({ data: DeviceDetail })),
        detail: { tags, summary: "Update a BYOS device (a new phone_number is only claimed until an SMS from it proves it)" },
      },
    )
    .post(
      "/api/byos/devices/:device/disable",
      async ({ caller: c, params }) => {
        await changeDeviceStatus(management, c.organization.id, params.device, "disable");
        return { data: await detail(c.organization.id, params.device) };
      },
      {
        auth: { apiKey: "session_only" },
        params: DeviceParams,
        response: { 200: Type.Object({ data: DeviceDetail }) },
        detail: { tags, summary: "Disable a BYOS device" },
      },
    )
    .post(
      "/api/byos/devices/:device/enable",
      async ({ caller: c, params }) => {
        await changeDeviceStatus(management, c.organization.id, params.device, "enable");
        return { data: await detail(c.organization.id, params.device) };
      },
      {
        auth: { apiKey: "session_only" },
        params: DeviceParams,
        response: { 200: Type.Object({ data: DeviceDetail }) },
        detail: { tags, summary: "Enable a BYOS device" },
      },
    )
    .delete(
      "/api/byos/devices/:device",
      async ({ caller: c, params, set }) => {
        await revokeDeviceById(management, c.organization.id, params.device);
        set.status = 204;
        return null;
      },
      { auth: { apiKey: "session_only", role: "admin" }, params: DeviceParams, detail: { tags, summary: "Revoke a BYOS device (final; admin or owner)" } },
    )
    .use(simCardRoutes(services))
    .use(relayRoutes(services));
}
