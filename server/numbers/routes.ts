import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import { notFound } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import type { Services } from "../services";
import { claimShared, claimVirtual, orderNumber } from "./claims";
import { lockNumber, requireNumber, unlockNumber } from "./locks";
import { presentHostedSim } from "./present";
import { AliasBody, ClaimBody, ClaimVirtualBody, HostedSimData, HostedSimList, LockBody, NumberListQuery, NumberParams, OrderBody } from "./schema";
import { findHostedSim, listHostedSims, setAlias } from "./store";

const tags = ["Numbers"];
const READ_SCOPE =
  "Spans every organization you are a member of (an API key: its organization); X-Organization-Id narrows it to one. A number attached to several of them appears once, `organizations` listing each of their attachments.";

/** Hosted SIMs (API.md §3 "Numbers"): list, show, order, claims, locks, alias. */
export function numberRoutes(services: Pick<Services, "auth" | "sql" | "jobs" | "events" | "clock" | "secrets">) {
  const { sql } = services;
  const show = async (c: Parameters<typeof requireNumber>[1], id: number) => ({ data: presentHostedSim(await requireNumber(sql, c, id)) });

  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/numbers",
      async ({ caller: c, query }) => {
        const rows = await listHostedSims(sql, c.readScope, { type: query.type, status: query.status, teamId: query.team_id });
        return { data: rows.map(presentHostedSim) };
      },
      {
        auth: { apiKey: "numbers.read" },
        query: NumberListQuery,
        response: { 200: HostedSimList },
        detail: {
          tags,
          summary: "List the numbers of your organizations",
          description: READ_SCOPE,
        },
      },
    )
    .get(
      "/api/numbers/:id",
      async ({ caller: c, params }) => {
        const row = await findHostedSim(sql, c.readScope, params.id);
        if (!row) throw notFound("Number");
        return { data: presentHostedSim(row) };
      },
      {
        auth: { apiKey: "numbers.read" },
        params: NumberParams,
        response: { 200: HostedSimData },
        detail: { tags, summary: "Show one number", description: READ_SCOPE },
      },
    )
    .post(
      "/api/numbers/order",
      async ({ caller: c, body, set }) => {
        const id = await orderNumber(sql, c, body);
        set.status = 201;
        return show(c, id);
      },
      {
        idempotent: true,
        auth: { apiKey: "none", role: "admin" },
        body: OrderBody,
        response: { 201: HostedSimData },
        detail: { tags, summary: "Order a free number from the shared pool" },
      },
    )
    .post(
      "/api/numbers/claim-shared",
      async ({ caller: c, body, set }) => {
        const id = await claimShared(sql, c, body);
        set.status = 201;
        return show(c, id);
      },
      {
        idempotent: true,
        auth: { apiKey: "none", role: "admin" },
        body: ClaimBody,
        response: { 201: HostedSimData },
        detail: { tags, summary: "Claim a seat on a shared number" },
      },
    )
    .post(
      "/api/numbers/claim-virtual",
      async ({ caller: c, body, set }) => {
        const id = await claimVirtual(sql, c, body);
        set.status = 201;
        return show(c, id);
      },
      {
        idempotent: true,
        auth: { apiKey: "none", role: "admin" },
        body: ClaimVirtualBody,
        response: { 201: HostedSimData },
        detail: { tags, summary: "Claim your own verified BYOS number" },
      },
    )
    .post(
      "/api/numbers/:id/lock",
      async ({ caller: c, params, body }) => {
        return { data: presentHostedSim(await lockNumber(services, c, params.id, body ?? {})) };
      },
      {
        idempotent: true,
        auth: { apiKey: "numbers.lock" },
        params: NumberParams,
        body: LockBody,
        response: { 200: HostedSimData },
        detail: { tags, summary: "Lock a number (or extend your lock)" },
      },
    )
    .post(
      "/api/numbers/:id/unlock",
      async ({ caller: c, params }) => {
        return { data: presentHostedSim(await unlockNumber(services, c, params.id)) };
      },
      { auth: { apiKey: "numbers.lock" }, params: NumberParams, response: { 200: HostedSimData }, detail: { tags, summary: "Release your lock on a number" } },
    )
    .patch(
      "/api/numbers/:id/alias",
      async ({ caller: c, params, body }) => {
        if (!(await setAlias(sql, c.organization.id, params.id, body.alias))) throw notFound("Number");
        return show(c, params.id);
      },
      {
        auth: { apiKey: "none" },
        params: NumberParams,
        body: AliasBody,
        response: { 200: HostedSimData },
        detail: { tags, summary: "Set your organization's alias for a number" },
      },
    );
}
