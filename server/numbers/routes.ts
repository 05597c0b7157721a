import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import type { Services } from "../services";
import { claimShared, claimVirtual, orderNumber } from "./claims";
import { lockNumber, requireNumber, unlockNumber } from "./locks";
import { presentHostedSim } from "./present";
import { AliasBody, ClaimBody, ClaimVirtualBody, HostedSimData, HostedSimList, LockBody, NumberListQuery, NumberParams, OrderBody } from "./schema";
import { listHostedSims, setAlias } from "./store";

const tags = ["Numbers"];

/** Hosted SIMs (API.md §3 "Numbers"): list, show, order, claims, locks, alias. */
export function numberRoutes(services: Pick<Services, "auth" | "sql" | "jobs" | "publish">) {
  const { sql } = services;
  const show = async (c: Parameters<typeof requireNumber>[1], id: number) => ({ data: presentHostedSim(await requireNumber(sql, c, id)) });

  return new Elysia()
    .use(callerPlugin(services.auth))
    .get(
      "/api/numbers",
      async ({ caller, query }) => {
        const c = await caller({ apiKey: "numbers.read" });
        const rows = await listHostedSims(sql, c.organization.id, { type: query.type, status: query.status, teamId: query.team_id });
        return { data: rows.map(presentHostedSim) };
      },
      { query: NumberListQuery, response: { 200: HostedSimList }, detail: { tags, summary: "List the numbers of your organization" } },
    )
    .get("/api/numbers/:id", async ({ caller, params }) => show(await caller({ apiKey: "numbers.read" }), params.id), {
      params: NumberParams,
      response: { 200: HostedSimData },
      detail: { tags, summary: "Show one number" },
    })
    .post(
      "/api/numbers/order",
      async ({ caller, body, set }) => {
        const c = await caller({ apiKey: "none", role: "admin" });
        const id = await orderNumber(sql, c, body);
        set.status = 201;
        return show(c, id);
      },
      { body: OrderBody, response: { 201: HostedSimData }, detail: { tags, summary: "Order a free number from the shared pool" } },
    )
    .post(
      "/api/numbers/claim-shared",
      async ({ caller, body, set }) => {
        const c = await caller({ apiKey: "none", role: "admin" });
        const id = await claimShared(sql, c, body);
        set.status = 201;
        return show(c, id);
      },
      { body: ClaimBody, response: { 201: HostedSimData }, detail: { tags, summary: "Claim a seat on a shared number" } },
    )
    .post(
      "/api/numbers/claim-virtual",
      async ({ caller, body, set }) => {
        const c = await caller({ apiKey: "none", role: "admin" });
        const id = await claimVirtual(sql, c, body);
        set.status = 201;
        return show(c, id);
      },
      { body: ClaimVirtualBody, response: { 201: HostedSimData }, detail: { tags, summary: "Claim your own verified BYOS number" } },
    )
    .post(
      "/api/numbers/:id/lock",
      async ({ caller, params, body }) => {
        const c = await caller({ apiKey: "numbers.lock" });
        return { data: presentHostedSim(await lockNumber(services, c, params.id, body ?? {})) };
      },
      { params: NumberParams, body: LockBody, response: { 200: HostedSimData }, detail: { tags, summary: "Lock a number (or extend your lock)" } },
    )
    .post(
      "/api/numbers/:id/unlock",
      async ({ caller, params }) => {
        const c = await caller({ apiKey: "numbers.lock" });
        return { data: presentHostedSim(await unlockNumber(services, c, params.id)) };
      },
      { params: NumberParams, response: { 200: HostedSimData }, detail: { tags, summary: "Release your lock on a number" } },
    )
    .patch(
      "/api/numbers/:id/alias",
      async ({ caller, params, body }) => {
        const c = await caller({ apiKey: "none" });
        if (!(await setAlias(sql, c.organization.id, params.id, body.alias))) throw notFound("Number");
        return show(c, params.id);
      },
      { params: NumberParams, body: AliasBody, response: { 200: HostedSimData }, detail: { tags, summary: "Set your organization's alias for a number" } },
    );
}
