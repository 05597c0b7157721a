import { Elysia } from "elysia";
import { callerPlugin } from "../auth/plugin";
import type { Sql } from "../db/client";
import { notFound, validationFailed } from "../errors";
import { idempotencyPlugin } from "../lib/idempotency";
import type { Services } from "../services";
import { presentMember, presentTeam } from "./present";
import { AddMemberBody, MemberData, MemberParams, TeamBody, TeamData, TeamList, TeamParams } from "./schema";
import { addTeamMember, deleteTeam, findOrganizationUser, findTeam, insertTeam, listTeamMembers, listTeams, removeTeamMember, renameTeam } from "./store";

const tags = ["Teams"];
const description = "Any member of the organization reads; changes need the admin or owner role. API keys answer 403 permission_denied.";
// No API-key permission grants team operations (API.md §2).
const read = { apiKey: "none" } as const;
const manage = { apiKey: "none", role: "admin" } as const;

async function teamWithMembers(sql: Sql, organizationId: number, id: number) {
  const team = await findTeam(sql, organizationId, id);
  if (!team) throw notFound("Team");
  const members = await listTeamMembers(sql, organizationId, id);
  return { data: { ...presentTeam(team), members: members.map(presentMember) } };
}

function memberLookup(body: { user_id?: number; email?: string }) {
  if (body.user_id !== undefined && body.email !== undefined) throw validationFailed({ user_id: ["must not be sent together with email"] });
  if (body.user_id === undefined && body.email === undefined) throw validationFailed({ user_id: ["is required when email is absent"] });
  return body.user_id !== undefined ? { userId: body.user_id } : { email: body.email };
}

export function teamRoutes(services: Pick<Services, "auth" | "sql" | "clock" | "secrets">) {
  const { sql } = services;
  return new Elysia()
    .use(callerPlugin(services.auth))
    .use(idempotencyPlugin(services))
    .get(
      "/api/teams",
      async ({ caller: c }) => {
        return { data: (await listTeams(sql, c.organization.id)).map(presentTeam) };
      },
      { auth: read, response: { 200: TeamList }, detail: { tags, summary: "List the organization's teams", description } },
    )
    .post(
      "/api/teams",
      async ({ caller: c, body, set }) => {
        const id = await insertTeam(sql, c.organization.id, body.name);
        set.status = 201;
        return teamWithMembers(sql, c.organization.id, id);
      },
      { idempotent: true, auth: manage, body: TeamBody, response: { 201: TeamData }, detail: { tags, summary: "Create a team", description } },
    )
    .get(
      "/api/teams/:team",
      async ({ caller: c, params }) => {
        return teamWithMembers(sql, c.organization.id, params.team);
      },
      { auth: read, params: TeamParams, response: { 200: TeamData }, detail: { tags, summary: "Show a team with its members", description } },
    )
    .patch(
      "/api/teams/:team",
      async ({ caller: c, params, body }) => {
        if (!(await renameTeam(sql, c.organization.id, params.team, body.name))) throw notFound("Team");
        return teamWithMembers(sql, c.organization.id, params.team);
      },
      { auth: manage, params: TeamParams, body: TeamBody, response: { 200: TeamData }, detail: { tags, summary: "Rename a team", description } },
    )
    .delete(
      "/api/teams/:team",
      async ({ caller: c, params, set }) => {
        if (!(await deleteTeam(sql, c.organization.id, params.team))) throw notFound("Team");
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      {
        auth: manage,
        params: TeamParams,
        detail: { tags, summary: "Delete a team: its webhook mappings go, its numbers go back to the organization", description },
      },
    )
    .post(
      "/api/teams/:team/members",
      async ({ caller: c, params, body, set }) => {
        const lookup = memberLookup(body);
        const team = await findTeam(sql, c.organization.id, params.team);
        if (!team) throw notFound("Team");
        const user = await findOrganizationUser(sql, c.organization.id, lookup);
        const field = lookup.userId !== undefined ? "user_id" : "email";
        const notAMember = () => validationFailed({ [field]: ["must name a member of this organization"] });
        if (!user) throw notAMember();
        const added = await addTeamMember(sql, team.id, user.id);
        if (added === "gone") throw notFound("Team");
        // Removed from the organization since it was looked up.
        if (added === "not_member") throw notAMember();
        set.status = added.created ? 201 : 200;
        return { data: presentMember({ ...user, added_at: added.added_at }) };
      },
      {
        idempotent: true,
        auth: manage,
        params: TeamParams,
        body: AddMemberBody,
        response: { 200: MemberData, 201: MemberData },
        detail: {
          tags,
          summary: "Add a member of the organization to the team, by user_id or email",
          description: `${description} 201 when added, 200 when the user already was a member. A user outside the organization answers 422.`,
        },
      },
    )
    .delete(
      "/api/teams/:team/members/:user",
      async ({ caller: c, params, set }) => {
        const team = await findTeam(sql, c.organization.id, params.team);
        if (!team || !(await removeTeamMember(sql, team.id, params.user))) throw notFound("Team member");
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      { auth: manage, params: MemberParams, detail: { tags, summary: "Remove a member from the team", description } },
    );
}
