import { beforeAll, describe, expect, test } from "bun:test";
import { deleteMembership } from "../../server/admin/store";
import { addTeamMember } from "../../server/teams/store";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { holdLocks, lockWaiters, receiveSms } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
// Starting the embedded database can take a while on a busy machine.
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ALL = ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"] as const;

async function createTeam(token: string, name = "Support") {
  const res = await ctx.request("POST", "/api/teams", { token, body: { name } });
  expect(res.status).toBe(201);
  return res.body.data as { id: number; name: string };
}

async function memberToken(orgId: number, role: "member" | "admin" = "member") {
  const user = await createUser(ctx.sql, { orgId, role });
  return { user, token: await sessionFor(ctx.sql, user.id) };
}

describe("teams: create, list, show, rename, delete", () => {
  test("create answers 201 with the team and an empty member list", async () => {
    const { token } = await createTenant(ctx.sql);
    const res = await ctx.request("POST", "/api/teams", { token, body: { name: "Support" } });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.any(Number),
      name: "Support",
      members_count: 0,
      members: [],
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
  });

  test("list: the organization's teams only, readable by members", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const t1 = await createTeam(a.token, "Alpha");
    const t2 = await createTeam(a.token, "Beta");
    await createTeam(b.token, "Other");
    const { token } = await memberToken(a.org.id);
    const res = await ctx.request("GET", "/api/teams", { token });
    expect(res.status).toBe(200);
    expect(res.body.data.map((t: any) => [t.id, t.name])).toEqual([
      [t1.id, "Alpha"],
      [t2.id, "Beta"],
    ]);
  });

  test("show includes members with their organization role; rename keeps them", async () => {
    const { org, token, user: owner } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    const { user: member } = await memberToken(org.id);
    expect((await ctx.request("POST", `/api/teams/${team.id}/members`, { token, body: { user_id: owner.id } })).status).toBe(201);
    expect((await ctx.request("POST", `/api/teams/${team.id}/members`, { token, body: { email: member.email } })).status).toBe(201);
    const res = await ctx.request("GET", `/api/teams/${team.id}`, { token });
    expect(res.status).toBe(200);
    expect(res.body.data.members_count).toBe(2);
    expect(res.body.data.members).toEqual([
      { id: owner.id, name: owner.name, email: owner.email, role: "owner", added_at: expect.stringMatching(ISO) },
      { id: member.id, name: member.name, email: member.email, role: "member", added_at: expect.stringMatching(ISO) },
    ]);
    const renamed = await ctx.request("PATCH", `/api/teams/${team.id}`, { token, body: { name: "Night shift" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: team.id, name: "Night shift", members_count: 2 });
    expect(renamed.body.data.members.length).toBe(2);
    expect((await ctx.request("GET", "/api/teams", { token })).body.data[0]).toMatchObject({ name: "Night shift", members_count: 2 });
  });

  test("delete: 204, gone; its numbers go back to the organization, a lock held for it goes on as the organization's", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    const number = `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const [sim] = await ctx.sql<{ id: number }[]>`
      insert into hosted_sims (number, provider, type, shared_max_orgs) values (${number}, 'test', 'shared', 5) returning id`;
    await ctx.sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id, team_id) values (${sim!.id}, ${org.id}, ${team.id})`;
    // Locked for the team: the lock goes on as the organization's, and what arrives under it names no team.
    const lock = await ctx.request("POST", `/api/numbers/${sim!.id}/lock`, { token, body: { team_id: team.id } });
    expect(lock.body.data.lock.team_id).toBe(team.id);
    const res = await ctx.request("DELETE", `/api/teams/${team.id}`, { token });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect((await ctx.request("GET", `/api/teams/${team.id}`, { token })).status).toBe(404);
    const [attachment] = await ctx.sql`select team_id from hosted_sim_organizations where hosted_sim_id = ${sim!.id}`;
    expect(attachment).toEqual({ team_id: null });
    const shown = (await ctx.request("GET", `/api/numbers/${sim!.id}`, { token })).body.data;
    expect(shown.lock).toMatchObject({ organization_id: org.id, team_id: null });
    const stored = await receiveSms(ctx.sql, sim!.id);
    expect((await ctx.sql`select team_id from messages where id = ${stored.messageId}`)[0]).toEqual({ team_id: null });
    expect((await ctx.request("DELETE", `/api/teams/${team.id}`, { token })).status).toBe(404);
  });
});

describe("team members", () => {
  test("add by user_id or by email (any case): 201 with the member; adding again answers 200 and changes nothing", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    const { user } = await memberToken(org.id);
    const byEmail = await ctx.request("POST", `/api/teams/${team.id}/members`, { token, body: { email: user.email.toUpperCase() } });
    expect(byEmail.status).toBe(201);
    expect(byEmail.body.data).toEqual({ id: user.id, name: user.name, email: user.email, role: "member", added_at: expect.stringMatching(ISO) });
    const again = await ctx.request("POST", `/api/teams/${team.id}/members`, { token, body: { user_id: user.id } });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(byEmail.body.data);
    expect((await ctx.request("GET", `/api/teams/${team.id}`, { token })).body.data.members_count).toBe(1);
  });

  test("a user outside the organization, or unknown, answers 422 on the field used and is not added", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const team = await createTeam(a.token);
    for (const body of [{ user_id: b.user.id }, { email: b.user.email }, { user_id: 999_999_999_999 }, { email: "nobody@example.test" }]) {
      const res = await ctx.request("POST", `/api/teams/${team.id}/members`, { token: a.token, body });
      expect(res.status).toBe(422);
      expectErrorShape(res.body, "validation_failed");
      expect(Object.keys(res.body.errors)).toEqual(Object.keys(body));
    }
    expect((await ctx.request("GET", `/api/teams/${team.id}`, { token: a.token })).body.data.members).toEqual([]);
  });

  test("remove: 204, then the member is gone; removing a non-member answers 404", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    const { user } = await memberToken(org.id);
    const { user: stays } = await memberToken(org.id);
    await ctx.request("POST", `/api/teams/${team.id}/members`, { token, body: { user_id: user.id } });
    await ctx.request("POST", `/api/teams/${team.id}/members`, { token, body: { user_id: stays.id } });
    const res = await ctx.request("DELETE", `/api/teams/${team.id}/members/${user.id}`, { token });
    expect(res.status).toBe(204);
    expect((await ctx.request("GET", `/api/teams/${team.id}`, { token })).body.data.members.map((m: any) => m.id)).toEqual([stays.id]);
    const again = await ctx.request("DELETE", `/api/teams/${team.id}/members/${user.id}`, { token });
    expect(again.status).toBe(404);
    expectErrorShape(again.body, "not_found");
  });
});

describe("teams: authorization", () => {
  test("no token or a bad token: 401 on every route", async () => {
    const { token, user } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    for (const [method, path, body] of routes(team.id, user.id)) {
      for (const bad of [undefined, "st_nope", "sk_nope"]) {
        const res = await ctx.request(method, path, { token: bad, body });
        expect(res.status).toBe(401);
        expectErrorShape(res.body, "unauthenticated");
      }
    }
  });

  test("an API key, whatever its permissions: 403 permission_denied on every route", async () => {
    const { org, token, user } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    const key = await createApiKey(ctx.sql, org.id, [...ALL]);
    for (const [method, path, body] of routes(team.id, user.id)) {
      const res = await ctx.request(method, path, { token: key.key, body });
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "permission_denied");
    }
  });

  test("members read but may not change teams: 403 permission_denied; admins may", async () => {
    const { org, token, user } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    const member = await memberToken(org.id);
    for (const [method, path, body] of routes(team.id, user.id)) {
      const res = await ctx.request(method, path, { token: member.token, body });
      if (method === "GET") {
        expect(res.status).toBe(200);
      } else {
        expect(res.status).toBe(403);
        expectErrorShape(res.body, "permission_denied");
      }
    }
    expect((await ctx.request("GET", `/api/teams/${team.id}`, { token })).body.data.name).toBe("Support");
    const admin = await memberToken(org.id, "admin");
    expect((await ctx.request("PATCH", `/api/teams/${team.id}`, { token: admin.token, body: { name: "By admin" } })).status).toBe(200);
    expect((await ctx.request("POST", `/api/teams/${team.id}/members`, { token: admin.token, body: { user_id: member.user.id } })).status).toBe(201);
    expect((await ctx.request("DELETE", `/api/teams/${team.id}`, { token: admin.token })).status).toBe(204);
  });

  test("another organization's team answers 404 on every route and is left unchanged", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const team = await createTeam(b.token);
    await ctx.request("POST", `/api/teams/${team.id}/members`, { token: b.token, body: { user_id: b.user.id } });
    for (const [method, path, body] of routes(team.id, b.user.id).filter(([, p]) => p !== "/api/teams")) {
      const res = await ctx.request(method, path, { token: a.token, body: method === "POST" ? { user_id: a.user.id } : body });
      expect(res.status).toBe(404);
      expectErrorShape(res.body, "not_found");
    }
    const intact = await ctx.request("GET", `/api/teams/${team.id}`, { token: b.token });
    expect(intact.body.data).toMatchObject({ name: "Support", members_count: 1 });
    expect((await ctx.request("GET", "/api/teams", { token: a.token })).body.data).toEqual([]);
  });
});

describe("teams: validation", () => {
  test("name: required string of 1..255 characters, on create and rename", async () => {
    const { token } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    for (const body of [{}, { name: "" }, { name: "x".repeat(256) }, { name: 5 }, { name: null }]) {
      for (const [method, path] of [
        ["POST", "/api/teams"],
        ["PATCH", `/api/teams/${team.id}`],
      ] as const) {
        const res = await ctx.request(method, path, { token, body });
        expect(res.status).toBe(422);
        expect(expectErrorShape(res.body, "validation_failed").errors.name).toBeArray();
      }
    }
    expect((await ctx.request("POST", "/api/teams", { token, body: { name: "x".repeat(255) } })).status).toBe(201);
    expect((await ctx.request("GET", `/api/teams/${team.id}`, { token })).body.data.name).toBe("Support");
  });

  test("members: user_id a positive integer (not a string) or email an address; exactly one of them", async () => {
    const { token, user } = await createTenant(ctx.sql);
    const team = await createTeam(token);
    const cases: [unknown, string][] = [
      [{}, "user_id"],
      [{ user_id: user.id, email: user.email }, "user_id"],
      [{ user_id: String(user.id) }, "user_id"],
      [{ user_id: 0 }, "user_id"],
      [{ user_id: 1.5 }, "user_id"],
      [{ email: "not-an-email" }, "email"],
      [{ email: `${"a".repeat(250)}@example.test` }, "email"],
    ];
    for (const [body, field] of cases) {
      const res = await ctx.request("POST", `/api/teams/${team.id}/members`, { token, body });
      expect(res.status).toBe(422);
      expect(Object.keys(expectErrorShape(res.body, "validation_failed").errors)).toContain(field);
    }
    expect((await ctx.request("GET", `/api/teams/${team.id}`, { token })).body.data.members).toEqual([]);
  });

  test("path ids must be positive integers", async () => {
    const { token } = await createTenant(ctx.sql);
    for (const path of ["/api/teams/abc", "/api/teams/0", "/api/teams/1.5", "/api/teams/99999999999999999999", "/api/teams/1/members/x"]) {
      const method = path.includes("members") ? "DELETE" : "GET";
      const res = await ctx.request(method, path, { token });
      expect(res.status).toBe(422);
      expectErrorShape(res.body, "validation_failed");
    }
  });
});

function routes(teamId: number, userId: number): [string, string, unknown?][] {
  return [
    ["GET", "/api/teams"],
    ["POST", "/api/teams", { name: "x" }],
    ["GET", `/api/teams/${teamId}`],
    ["PATCH", `/api/teams/${teamId}`, { name: "x" }],
    ["POST", `/api/teams/${teamId}/members`, { user_id: userId }],
    ["DELETE", `/api/teams/${teamId}/members/${userId}`],
    ["DELETE", `/api/teams/${teamId}`],
  ];
}

// PostgreSQL only: the addition and the removal wait on the membership row (teams/store.ts addTeamMember).
describe.skipIf(!process.env.DATABASE_URL)("a member added to a team while removed from the organization", () => {
  test("keeps no place in the team, whichever commits first", async () => {
    const t = await createTenant(ctx.sql);
    const [team] = await ctx.sql<{ id: number }[]>`insert into teams (organization_id, name) values (${t.org.id}, 'race') returning id`;
    const teamRows = async (userId: number) => (await ctx.sql`select 1 from team_members where team_id = ${team!.id} and user_id = ${userId}`).length;
    // The removal first: the addition waits for it, then finds no membership.
    const first = await createUser(ctx.sql, { orgId: t.org.id, role: "member" });
    let release = await holdLocks(ctx.sql, (tx) => deleteMembership(tx, first.id, t.org.id));
    const added = addTeamMember(ctx.sql, team!.id, first.id);
    await lockWaiters(ctx.sql, 1);
    await release();
    expect(await added).toBe("not_member");
    expect(await teamRows(first.id)).toBe(0);
    // The addition first: the removal waits for it, then deletes the team row it made.
    const second = await createUser(ctx.sql, { orgId: t.org.id, role: "member" });
    release = await holdLocks(ctx.sql, (tx) => addTeamMember(tx, team!.id, second.id));
    const removed = ctx.sql.begin((tx) => deleteMembership(tx, second.id, t.org.id));
    await lockWaiters(ctx.sql, 1);
    await release();
    expect(await removed).toBe("member");
    expect(await teamRows(second.id)).toBe(0);
  });
});
