import { beforeAll, describe, expect, test } from "bun:test";
import { AppError } from "../../server/errors";
import { attachOrganization, upsertVirtualAttachment } from "../../server/numbers/store";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { attachNumber, createByosNumber, createPoolNumber, createSharedNumber, createTeam, receiveSms } from "../fixtures-numbers";
import { expectErrorShape, sharedTestContext, type TestContext } from "../helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

describe("GET /api/numbers and /api/numbers/{id}", () => {
  test("a hosted SIM carries SPEC 2.1 fields plus lock, and only the caller's own attachment", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const teamA = await createTeam(ctx.sql, a.org.id, "Support A");
    const teamB = await createTeam(ctx.sql, b.org.id, "Secret B");
    const sim = await createPoolNumber(ctx.sql);
    await attachNumber(ctx.sql, sim.id, a.org.id, { alias: "front desk", teamId: teamA.id });
    await attachNumber(ctx.sql, sim.id, b.org.id, { alias: "b's private alias", teamId: teamB.id });

    const res = await ctx.request("GET", "/api/numbers", { token: a.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    const n = res.body.data[0];
    expect(n).toMatchObject({
      id: sim.id,
      number: sim.number,
      provider: "simprov",
      status: "active",
      type: "shared",
      shared_max_orgs: 5,
      messages_received_count: 0,
      organizations: [{ id: a.org.id, name: a.org.name, alias: "front desk", team_id: teamA.id }],
      teams: [{ id: teamA.id, name: "Support A" }],
      locked: false,
      lock: null,
    });
    expect(n.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(JSON.stringify(res.body)).not.toContain("b's private alias");
    expect(JSON.stringify(res.body)).not.toContain("Secret B");

    const one = await ctx.request("GET", `/api/numbers/${sim.id}`, { token: b.token });
    expect(one.status).toBe(200);
    expect(one.body.data.organizations).toEqual([{ id: b.org.id, name: b.org.name, alias: "b's private alias", team_id: teamB.id }]);
  });

  test("filters type, status and team_id", async () => {
    const a = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const shared = await createSharedNumber(ctx.sql, [a.org.id]);
    const inactive = await createPoolNumber(ctx.sql, { status: "inactive" });
    await attachNumber(ctx.sql, inactive.id, a.org.id, { teamId: team.id });
    const byos = await createByosNumber(ctx.sql, a.org.id);
    const ids = async (q: string) => (await ctx.request("GET", `/api/numbers${q}`, { token: a.token })).body.data.map((n: any) => n.id);
    expect(await ids("")).toEqual([shared.id, inactive.id, byos.hostedSimId].sort((x, y) => x - y));
    expect(await ids("?type=virtual")).toEqual([byos.hostedSimId]);
    expect(await ids("?status=inactive")).toEqual([inactive.id]);
    expect(await ids(`?team_id=${team.id}`)).toEqual([inactive.id]);
    for (const path of ["/api/numbers/1.5", "/api/numbers/0", "/api/messages/1.5", "/api/numbers?team_id=2.5"]) {
      expect(`${path} ${(await ctx.request("GET", path, { token: a.token })).status}`).toBe(`${path} 422`);
    }
    for (const q of ["team_id=abc", "team_id=0", "type=%00", "status=a%00b"]) {
      expect(`${q} ${(await ctx.request("GET", `/api/numbers?${q}`, { token: a.token })).status}`).toBe(`${q} 422`);
    }
  });

  test("another organization's number answers 404 on every route", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [b.org.id]);
    const calls: [string, string, unknown?][] = [
      ["GET", `/api/numbers/${sim.id}`],
      ["POST", `/api/numbers/${sim.id}/lock`, {}],
      ["POST", `/api/numbers/${sim.id}/unlock`],
      ["PATCH", `/api/numbers/${sim.id}/alias`, { alias: "mine" }],
      ["GET", `/api/messages?hosted_sim=${sim.id}`],
      ["POST", "/api/messages", { hosted_sim: sim.id, to: "+15551234567", text: "hi" }],
    ];
    for (const [method, path, body] of calls) {
      const res = await ctx.request(method, path, { token: a.token, body });
      expect(`${method} ${path} ${res.status}`).toBe(`${method} ${path} 404`);
      expectErrorShape(res.body, "not_found");
    }
  });

  test("API keys: numbers.read lists and shows; without it 403; never order, claim or alias", async () => {
    const a = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id]);
    const reader = await createApiKey(ctx.sql, a.org.id, ["numbers.read"]);
    const other = await createApiKey(ctx.sql, a.org.id, ["messages.read", "numbers.lock", "webhooks.receive"]);
    expect((await ctx.request("GET", "/api/numbers", { token: reader.key })).body.data.map((n: any) => n.id)).toEqual([sim.id]);
    expect((await ctx.request("GET", `/api/numbers/${sim.id}`, { token: reader.key })).status).toBe(200);
    for (const path of ["/api/numbers", `/api/numbers/${sim.id}`]) {
      const res = await ctx.request("GET", path, { token: other.key });
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "permission_denied");
    }
    const all = await createApiKey(ctx.sql, a.org.id, ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"]);
    for (const [method, path, body] of [
      ["POST", "/api/numbers/order", {}],
      ["POST", "/api/numbers/claim-shared", {}],
      ["POST", "/api/numbers/claim-virtual", { hosted_sim_id: sim.id }],
      ["PATCH", `/api/numbers/${sim.id}/alias`, { alias: "x" }],
    ] as const) {
      const res = await ctx.request(method, path, { token: all.key, body });
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "permission_denied");
    }
  });
});

describe("order and claims", () => {
  test("order takes a free pool number; members may not; 409 pool_exhausted when none is free", async () => {
    const a = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const member = await createUser(ctx.sql, { orgId: a.org.id, role: "member" });
    const denied = await ctx.request("POST", "/api/numbers/order", { token: await sessionFor(ctx.sql, member.id), body: {} });
    expect(denied.status).toBe(403);
    expectErrorShape(denied.body, "permission_denied");

    await createPoolNumber(ctx.sql);
    const res = await ctx.request("POST", "/api/numbers/order", { token: a.token, body: { team_id: team.id, alias: "sales line" } });
    expect(res.status).toBe(201);
    expect(res.body.data.type).toBe("shared");
    expect(res.body.data.organizations).toEqual([{ id: a.org.id, name: a.org.name, alias: "sales line", team_id: team.id }]);

    // Draining the whole pool is only fair on this process's own embedded database, never on a shared one.
    if (ctx.services.db.kind !== "embedded") return;
    let last = res;
    for (let i = 0; i < 500 && last.status === 201; i++) last = await ctx.request("POST", "/api/numbers/order", { token: a.token, body: {} });
    expect(last.status).toBe(409);
    expectErrorShape(last.body, "pool_exhausted");
  });

  test("concurrent orders and claims beyond the first candidates' worth all get a number while the pool has room", async () => {
    // Every request reads the same first 20 candidates; once those are taken the pool still has room.
    for (let i = 0; i < 30; i++) await createPoolNumber(ctx.sql);
    const orderers = await Promise.all(Array.from({ length: 25 }, () => createTenant(ctx.sql)));
    const orders = await Promise.all(orderers.map((t) => ctx.request("POST", "/api/numbers/order", { token: t.token, body: {} })));
    expect(orders.map((r) => r.status)).toEqual(orderers.map(() => 201));
    expect(new Set(orders.map((r) => r.body.data.id)).size).toBe(25);

    const owner = await createTenant(ctx.sql);
    for (let i = 0; i < 30; i++) await createSharedNumber(ctx.sql, [owner.org.id], { maxOrgs: 2 });
    const claimers = await Promise.all(Array.from({ length: 25 }, () => createTenant(ctx.sql)));
    const claims = await Promise.all(claimers.map((t) => ctx.request("POST", "/api/numbers/claim-shared", { token: t.token, body: {} })));
    expect(claims.map((r) => r.status)).toEqual(claimers.map(() => 201));
  });

  test("order with a team of another organization is a validation error", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const teamB = await createTeam(ctx.sql, b.org.id);
    const res = await ctx.request("POST", "/api/numbers/order", { token: a.token, body: { team_id: teamB.id } });
    expect(res.status).toBe(422);
    expect(res.body.errors.team_id).toBeDefined();
  });

  test("claim-shared by id: seat taken, already_claimed, shared_number_full, unknown 404", async () => {
    const [a, b, c] = [await createTenant(ctx.sql), await createTenant(ctx.sql), await createTenant(ctx.sql)];
    const sim = await createSharedNumber(ctx.sql, [a.org.id], { maxOrgs: 2 });
    const ok = await ctx.request("POST", "/api/numbers/claim-shared", { token: b.token, body: { hosted_sim_id: sim.id, alias: "b line" } });
    expect(ok.status).toBe(201);
    expect(ok.body.data.organizations).toEqual([{ id: b.org.id, name: b.org.name, alias: "b line", team_id: null }]);
    expectErrorShape((await ctx.request("POST", "/api/numbers/claim-shared", { token: b.token, body: { hosted_sim_id: sim.id } })).body, "already_claimed");
    const full = await ctx.request("POST", "/api/numbers/claim-shared", { token: c.token, body: { hosted_sim_id: sim.id } });
    expect(full.status).toBe(409);
    expectErrorShape(full.body, "shared_number_full");
    expect((await ctx.request("POST", "/api/numbers/claim-shared", { token: c.token, body: { hosted_sim_id: 9_000_000_000 } })).status).toBe(404);
  });

  test("claim-shared without an id picks an owned shared number with the fewest organizations that has room", async () => {
    const owners = [await createTenant(ctx.sql), await createTenant(ctx.sql), await createTenant(ctx.sql)];
    const me = await createTenant(ctx.sql);
    await createSharedNumber(
      ctx.sql,
      owners.map((o) => o.org.id),
    );
    await createSharedNumber(ctx.sql, [owners[0]!.org.id]);
    const [fewest] = await ctx.sql<{ n: number }[]>`
      select min(c)::int as n from (
        select count(*) as c from hosted_sims h join hosted_sim_organizations a on a.hosted_sim_id = h.id
        where h.type = 'shared' and h.status = 'active' group by h.id having count(*) < min(h.shared_max_orgs)) x`;
    const res = await ctx.request("POST", "/api/numbers/claim-shared", { token: me.token, body: {} });
    expect(res.status).toBe(201);
    const [picked] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from hosted_sim_organizations where hosted_sim_id = ${res.body.data.id}`;
    expect(picked!.n - 1).toBe(fewest!.n);
    expect(res.body.data.organizations).toEqual([{ id: me.org.id, name: me.org.name, alias: null, team_id: null }]);
    const second = await ctx.request("POST", "/api/numbers/claim-shared", { token: me.token, body: {} });
    expect(second.status).toBe(201);
    expect(second.body.data.id).not.toBe(res.body.data.id);
  });

  test("race: organizations racing for the last seat, exactly one wins", async () => {
    const owner = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [owner.org.id], { maxOrgs: 2 });
    const racers = await Promise.all(Array.from({ length: 6 }, () => createTenant(ctx.sql)));
    const results = await Promise.all(racers.map((r) => ctx.request("POST", "/api/numbers/claim-shared", { token: r.token, body: { hosted_sim_id: sim.id } })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expectErrorShape(r.body, "shared_number_full");
    const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from hosted_sim_organizations where hosted_sim_id = ${sim.id}`;
    expect(row!.n).toBe(2);
  });

  test("claim-virtual: own verified BYOS number assigned to a team; others' or unverified 404", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    const mine = await createByosNumber(ctx.sql, a.org.id, { attach: false });
    const res = await ctx.request("POST", "/api/numbers/claim-virtual", { token: a.token, body: { hosted_sim_id: mine.hostedSimId, team_id: team.id } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ type: "virtual", provider: "byos", teams: [{ id: team.id, name: team.name }] });
    // Verification already attached it: claiming assigns the team (and alias) again.
    const again = await ctx.request("POST", "/api/numbers/claim-virtual", { token: a.token, body: { hosted_sim_id: mine.hostedSimId, alias: "phone 1" } });
    expect(again.status).toBe(201);
    expect(again.body.data.organizations[0]).toMatchObject({ alias: "phone 1", team_id: team.id });

    expect((await ctx.request("POST", "/api/numbers/claim-virtual", { token: b.token, body: { hosted_sim_id: mine.hostedSimId } })).status).toBe(404);
    const pending = await createByosNumber(ctx.sql, a.org.id, { attach: false, simStatus: "pending" });
    expect((await ctx.request("POST", "/api/numbers/claim-virtual", { token: a.token, body: { hosted_sim_id: pending.hostedSimId } })).status).toBe(404);
    const shared = await createPoolNumber(ctx.sql);
    expect((await ctx.request("POST", "/api/numbers/claim-virtual", { token: a.token, body: { hosted_sim_id: shared.id } })).status).toBe(404);
    expect((await ctx.request("POST", "/api/numbers/claim-virtual", { token: a.token, body: {} })).status).toBe(422);
  });
});

describe("PATCH /api/numbers/{id}/alias", () => {
  test("alias is per organization; null clears it; bounds 1..64", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const sim = await createSharedNumber(ctx.sql, [a.org.id, b.org.id]);
    const res = await ctx.request("PATCH", `/api/numbers/${sim.id}/alias`, { token: a.token, body: { alias: "A's name" } });
    expect(res.status).toBe(200);
    expect(res.body.data.organizations[0].alias).toBe("A's name");
    const seenByB = await ctx.request("GET", `/api/numbers/${sim.id}`, { token: b.token });
    expect(seenByB.body.data.organizations[0].alias).toBeNull();
    expect((await ctx.request("PATCH", `/api/numbers/${sim.id}/alias`, { token: a.token, body: { alias: null } })).body.data.organizations[0].alias).toBeNull();
    for (const alias of ["", "x".repeat(65), 5]) {
      const bad = await ctx.request("PATCH", `/api/numbers/${sim.id}/alias`, { token: a.token, body: { alias } });
      expect(bad.status).toBe(422);
      expectErrorShape(bad.body, "validation_failed");
    }
    expect((await ctx.request("PATCH", `/api/numbers/${sim.id}/alias`, { token: a.token, body: { alias: "x".repeat(64) } })).status).toBe(200);
  });
});

describe("reads span every organization of the caller (SPEC.md 1.4)", () => {
  test("a number of two of the caller's organizations appears once, listing both; a message both see counts once; an API key reads its own organization only", async () => {
    const a = await createTenant(ctx.sql);
    const d = await createTenant(ctx.sql);
    await ctx.sql`insert into memberships (user_id, organization_id, role) values (${a.user.id}, ${d.org.id}, 'member')`;
    const both = await createSharedNumber(ctx.sql, [a.org.id, d.org.id]);
    const onlyD = await createSharedNumber(ctx.sql, [d.org.id]);
    await receiveSms(ctx.sql, both.id);
    const list = await ctx.request("GET", "/api/numbers", { token: a.token });
    expect(list.body.data.map((n: { id: number }) => n.id)).toEqual([both.id, onlyD.id]);
    expect(list.body.data[0].organizations.map((o: { id: number }) => o.id)).toEqual([a.org.id, d.org.id].sort((x, y) => x - y));
    expect(list.body.data[0].messages_received_count).toBe(1);
    expect((await ctx.request("GET", `/api/numbers/${onlyD.id}`, { token: a.token })).status).toBe(200);
    const key = await createApiKey(ctx.sql, a.org.id, ["numbers.read"]);
    const byKey = await ctx.request("GET", "/api/numbers", { token: key.key });
    expect(byKey.body.data.map((n: { id: number }) => n.id)).toEqual([both.id]);
    expect(byKey.body.data[0].organizations.map((o: { id: number }) => o.id)).toEqual([a.org.id]);
    expect((await ctx.request("GET", `/api/numbers/${onlyD.id}`, { token: key.key })).status).toBe(404);
  });
});

describe("a team deleted between the check and the insert (a concurrent DELETE /api/teams/{id})", () => {
  test("an attachment naming it fails with the 422 of a team that is not the organization's, not a 500", async () => {
    const { org } = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, org.id);
    const sim = await createPoolNumber(ctx.sql);
    await ctx.sql`delete from teams where id = ${team.id}`;
    for (const attach of [attachOrganization, upsertVirtualAttachment]) {
      const refused = await ctx.sql.begin((tx) => attach(tx, sim.id, { organizationId: org.id, teamId: team.id })).catch((e) => e);
      expect(refused).toBeInstanceOf(AppError);
      expect([refused.status, refused.code, refused.extra.errors]).toEqual([422, "validation_failed", { team_id: ["is not a team of your organization"] }]);
    }
  });
});
