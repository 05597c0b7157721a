import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createOrg, createUser, sessionFor } from "../fixtures";
import { eventually } from "../fixtures-numbers";
import { createTestContext, type TestContext } from "../helpers";
import { enableTotp } from "../integration/oauth-flow";
import { cliEnv, runCli, uniqueNumber } from "./cli-helpers";

// Admin commands work on the database directly. The context keeps its database open (the
// embedded one served on its socket), which is the "while the server runs" case.
let ctx: TestContext;
let env: Record<string, string>;
beforeAll(async () => {
  ctx = await createTestContext();
  env = cliEnv(ctx);
});
afterAll(() => ctx?.close());

const admin = (...args: string[]) => runCli(args, { env });

describe("simhost admin org create", () => {
  test("creates the organization and prints { id, name, plan }", async () => {
    const name = `Org ${crypto.randomUUID()}`;
    const r = await admin("admin", "org", "create", name, "--plan", "pro", "--json");
    expect(r.code).toBe(0);
    const out = r.json();
    expect(out).toEqual({ id: expect.any(Number), name, plan: "pro" });
    const [row] = await ctx.sql`select name, plan from organizations where id = ${out.id}`;
    expect(row).toEqual({ name, plan: "pro" });
  });

  test("a name over 255 characters is an error (exit 1), nothing created", async () => {
    const r = await admin("admin", "org", "create", "x".repeat(256));
    expect([r.code, r.stderr]).toEqual([1, expect.stringContaining("at most 255 characters")]);
    expect(await ctx.sql`select 1 from organizations where name = ${"x".repeat(256)}`).toHaveLength(0);
  });

  test("plan defaults to free; human output names the organization", async () => {
    const r = await admin("admin", "org", "create", "Plain Org");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Created organization \d+ "Plain Org" \(plan free\)/);
  });

  test("an unknown plan is a usage error (exit 2), nothing created", async () => {
    const before = await ctx.sql`select count(*)::int as n from organizations`;
    const r = await admin("admin", "org", "create", "Bad Plan Org", "--plan", "gold", "--json");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("gold");
    expect(await ctx.sql`select count(*)::int as n from organizations`).toEqual(before);
  });
});

describe("simhost admin user create", () => {
  test("creates a user with an argon2id hash; the first member is owner, the next member", async () => {
    const org = await createOrg(ctx.sql);
    const email = `${crypto.randomUUID().slice(0, 8)}@example.test`;
    const r = await admin("admin", "user", "create", "--org", String(org.id), "--email", email, "--password", "s3cret-pass", "--name", "Ada", "--json");
    expect(r.code).toBe(0);
    const out = r.json();
    expect(out).toEqual({ id: expect.any(Number), email });
    const [user] = await ctx.sql`select name, password_hash from users where id = ${out.id}`;
    expect(user!.name).toBe("Ada");
    expect(user!.password_hash).toStartWith("$argon2id$");
    expect(await Bun.password.verify("s3cret-pass", user!.password_hash)).toBe(true);
    const [m] = await ctx.sql`select role from memberships where user_id = ${out.id} and organization_id = ${org.id}`;
    expect(m!.role).toBe("owner");

    const second = await admin("admin", "user", "create", "--org", String(org.id), "--email", `x${email}`, "--password", "another-pass", "--json");
    expect(second.code).toBe(0);
    const [m2] = await ctx.sql`select role from memberships where user_id = ${second.json().id}`;
    expect(m2!.role).toBe("member");
  });

  test("an existing email (any case) gets the membership added, password unchanged", async () => {
    const a = await createOrg(ctx.sql);
    const b = await createOrg(ctx.sql);
    await createUser(ctx.sql, { orgId: b.id, role: "owner" });
    const email = `${crypto.randomUUID().slice(0, 8)}@example.test`;
    const first = await admin("admin", "user", "create", "--org", String(a.id), "--email", email, "--password", "first-password", "--json");
    const again = await admin(
      "admin",
      "user",
      "create",
      "--org",
      String(b.id),
      "--email",
      email.toUpperCase(),
      "--password",
      "other-password",
      "--role",
      "admin",
      "--json",
    );
    expect(again.code).toBe(0);
    expect(again.json().id).toBe(first.json().id);
    const roles = await ctx.sql`select organization_id, role from memberships where user_id = ${first.json().id} order by organization_id`;
    expect([...roles]).toEqual([
      { organization_id: a.id, role: "owner" },
      { organization_id: b.id, role: "admin" },
    ]);
    const [user] = await ctx.sql`select password_hash from users where id = ${first.json().id}`;
    expect(await Bun.password.verify("first-password", user!.password_hash)).toBe(true);
    // An existing user's password is not used, so a short one is not refused for it.
    const third = await createOrg(ctx.sql);
    await createUser(ctx.sql, { orgId: third.id, role: "owner" });
    expect((await admin("admin", "user", "create", "--org", String(third.id), "--email", email, "--password", "short")).code).toBe(0);
    // Said as it is: a membership there already is not "added" again.
    const said = async (...extra: string[]) =>
      (await admin("admin", "user", "create", "--org", String(b.id), "--email", email, "--password", "other-password", ...extra)).stdout.trim();
    expect(await said("--role", "member")).toEndWith(`is member of organization ${b.id} (existing user, role changed from admin).`);
    expect(await said()).toEndWith(`is member of organization ${b.id} (existing user, unchanged).`);
  });

  test("unknown organization: exit 1 with one line on stderr", async () => {
    const r = await admin("admin", "user", "create", "--org", "987654321", "--email", "nobody@example.test", "--password", "long-enough");
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("Organization 987654321 not found.\n");
    expect(r.stdout).toBe("");
  });

  test("usage errors exit 2: bad email, missing password, bad role", async () => {
    const org = await createOrg(ctx.sql);
    const base = ["admin", "user", "create", "--org", String(org.id)];
    expect((await admin(...base, "--email", "not-an-email", "--password", "long-enough")).code).toBe(2);
    expect((await admin(...base, "--email", "a@example.test")).code).toBe(2);
    expect((await admin(...base, "--email", "a@example.test", "--password", "long-enough", "--role", "king")).code).toBe(2);
    expect((await admin("admin", "user", "create", "--org", "zero", "--email", "a@example.test", "--password", "long-enough")).code).toBe(2);
  });
});

describe("changes by admin commands reach the running server at once (no cached caller outlives them)", () => {
  const newKey = (token: string) => ctx.request("POST", "/api/api-keys", { token, body: { name: "k", permissions: ["numbers.read"] } });

  test("admin user remove: the removed member's session stops acting in the organization as soon as the command returns", async () => {
    const org = await createOrg(ctx.sql);
    await createUser(ctx.sql, { orgId: org.id, role: "owner" });
    const member = await createUser(ctx.sql, { orgId: org.id, role: "member" });
    const token = await sessionFor(ctx.sql, member.id);
    // The identity must be cached for this to prove anything. The cache is used only while the
    // revocation log's last read is fresh (500 ms), which a loaded machine can let lapse: wait for
    // it rather than assume it, then check the lookup was stored.
    await eventually(() => ctx.services.auth.cacheInUse(), 10_000, "the caller cache in use");
    const cached = ctx.services.auth.cacheSize();
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(200);
    expect(ctx.services.auth.cacheSize()).toBe(cached + 1);

    const r = await admin("admin", "user", "remove", "--org", String(org.id), "--email", member.email.toUpperCase(), "--json");
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ id: member.id, email: member.email, organization_id: org.id });
    const after = await ctx.request("GET", "/api/me", { token });
    expect(after.status).toBe(403);
    expect(after.body.code).toBe("permission_denied");
    expect(await ctx.sql`select 1 from memberships where user_id = ${member.id}`).toHaveLength(0);
  });

  test("admin user remove: an unknown user or a non-member is an error (exit 1), nothing removed", async () => {
    const org = await createOrg(ctx.sql);
    const outsider = await createUser(ctx.sql, { orgId: (await createOrg(ctx.sql)).id });
    const unknown = await admin("admin", "user", "remove", "--org", String(org.id), "--email", "nobody@example.test");
    expect([unknown.code, unknown.stderr]).toEqual([1, "No user nobody@example.test.\n"]);
    const stranger = await admin("admin", "user", "remove", "--org", String(org.id), "--email", outsider.email);
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toContain("is not a member of organization");
    expect(await ctx.sql`select 1 from memberships where user_id = ${outsider.id}`).toHaveLength(1);
  });

  test("admin user reset-2fa: two-factor authentication off, and every session of the user ends at once; an unknown email exits 1", async () => {
    const org = await createOrg(ctx.sql);
    const u = await createUser(ctx.sql, { orgId: org.id, role: "owner" });
    await enableTotp(ctx.sql, u.id);
    const token = await sessionFor(ctx.sql, u.id);
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(200);
    const r = await admin("admin", "user", "reset-2fa", "--email", u.email.toUpperCase());
    expect([r.code, r.stdout.trim()]).toEqual([
      0,
      `Two-factor authentication is off for <${u.email}>; 1 session and 0 OAuth grants ended: they sign in again with their password.`,
    ]);
    expect((await ctx.request("GET", "/api/me", { token })).status).toBe(401);
    expect((await ctx.sql`select totp_enabled, totp_secret from users where id = ${u.id}`)[0]).toEqual({ totp_enabled: false, totp_secret: null });
    const login = await ctx.request("POST", "/api/auth/login", { body: { email: u.email, password: u.password } });
    expect([login.status, login.body["2fa_required"]]).toEqual([200, undefined]);
    const unknown = await admin("admin", "user", "reset-2fa", "--email", "nobody@example.test");
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining("No user nobody@example.test")]);
  });

  test("admin user create --role: an admin demoted to member is refused admin operations as soon as the command returns", async () => {
    const org = await createOrg(ctx.sql);
    const user = await createUser(ctx.sql, { orgId: org.id, role: "admin" });
    const token = await sessionFor(ctx.sql, user.id);
    expect((await newKey(token)).status).toBe(201); // cached with role admin
    const r = await admin("admin", "user", "create", "--org", String(org.id), "--email", user.email, "--password", "unused-password", "--role", "member");
    expect(r.code).toBe(0);
    expect((await newKey(token)).status).toBe(403);
  });
});

describe("simhost admin plan set", () => {
  test("changes the plan", async () => {
    const org = await createOrg(ctx.sql);
    const r = await admin("admin", "plan", "set", String(org.id), "enterprise", "--json");
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ id: org.id, name: org.name, plan: "enterprise" });
    const [row] = await ctx.sql`select plan from organizations where id = ${org.id}`;
    expect(row!.plan).toBe("enterprise");
  });

  test("unknown organization exits 1, unknown plan exits 2", async () => {
    const missing = await admin("admin", "plan", "set", "987654321", "pro");
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe("Organization 987654321 not found.");
    const org = await createOrg(ctx.sql);
    expect((await admin("admin", "plan", "set", String(org.id), "platinum")).code).toBe(2);
  });
});

describe("simhost pool", () => {
  test("add: hosted SIMs with the SPEC.md 2.1 fields; shared defaults to 5 seats", async () => {
    const [n1, n2] = [uniqueNumber(), uniqueNumber()];
    const r = await admin("pool", "add", n1, n2, "--provider", "acme", "--json");
    expect(r.code).toBe(0);
    const { data } = r.json();
    expect(data.map((s: any) => s.number)).toEqual([n1, n2]);
    for (const sim of data) {
      expect(sim).toMatchObject({ id: expect.any(Number), provider: "acme", status: "active", type: "shared", shared_max_orgs: 5, messages_received_count: 0 });
      expect(sim.organizations).toEqual([]);
      expect(sim.teams).toEqual([]);
      expect(new Date(sim.created_at).toISOString()).toBe(sim.created_at);
      expect(new Date(sim.updated_at).toISOString()).toBe(sim.updated_at);
    }
  });

  test("add: virtual defaults to 1 seat, --max-orgs overrides", async () => {
    const virtual = await admin("pool", "add", uniqueNumber(), "--type", "virtual", "--json");
    expect(virtual.json().data[0]).toMatchObject({ type: "virtual", shared_max_orgs: 1 });
    const three = await admin("pool", "add", uniqueNumber(), "--max-orgs", "3", "--json");
    expect(three.json().data[0]).toMatchObject({ type: "shared", shared_max_orgs: 3 });
  });

  test("add: a number that is not E.164 is a usage error; nothing is added", async () => {
    const good = uniqueNumber();
    const r = await admin("pool", "add", good, "5551234", "--json");
    expect(r.code).toBe(2);
    expect(await ctx.sql`select id from hosted_sims where number = ${good}`).toHaveLength(0);
    expect((await admin("pool", "add", uniqueNumber(), "--type", "premium")).code).toBe(2);
    expect((await admin("pool", "add", uniqueNumber(), "--max-orgs", "0")).code).toBe(2);
  });

  test("add: a number already in the pool exits 1 and adds none of the batch", async () => {
    const [existing, fresh] = [uniqueNumber(), uniqueNumber()];
    expect((await admin("pool", "add", existing)).code).toBe(0);
    const r = await admin("pool", "add", fresh, existing);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`Already in the pool: ${existing}. None of the 2 numbers given was added.`);
    expect(await ctx.sql`select id from hosted_sims where number = ${fresh}`).toHaveLength(0);
  });

  test("list: seat use per number, with the organizations attached", async () => {
    const number = uniqueNumber();
    const added = (await admin("pool", "add", number, "--max-orgs", "2", "--json")).json().data[0];
    const org = await createOrg(ctx.sql);
    await ctx.sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id, alias) values (${added.id}, ${org.id}, 'front desk')`;
    const r = await admin("pool", "list", "--json");
    expect(r.code).toBe(0);
    const sim = r.json().data.find((s: any) => s.id === added.id);
    expect(sim).toMatchObject({ number, seats_used: 1, seats_free: 1, organizations: [{ id: org.id, name: org.name, alias: "front desk", team_id: null }] });
    const human = await admin("pool", "list");
    expect(human.stdout).toMatch(/^ID\s+NUMBER\s+TYPE/);
    expect(human.stdout).toMatch(new RegExp(`${added.id}\\s+\\${number}\\s+shared\\s+default\\s+active\\s+1/2`));
  });
});

describe.skipIf(Boolean(process.env.DATABASE_URL))("admin commands without a running server (embedded)", () => {
  test("open the embedded database themselves, migrate it and leave it consistent", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "simhost-cli-admin-"));
    const offline = { ...env, DATA_DIR: dataDir };
    const first = await runCli(["admin", "org", "create", "Offline One", "--json"], { env: offline });
    expect(first.code).toBe(0);
    const second = await runCli(["admin", "org", "create", "Offline Two", "--json"], { env: offline });
    expect(second.code).toBe(0);
    expect(second.json().id).toBe(first.json().id + 1);
  });
});

describe("an organization keeps an owner", () => {
  test("removing or demoting its last owner while others remain is an error (exit 1), nothing changed; with another owner, or as the last member, it is done", async () => {
    const org = await createOrg(ctx.sql);
    const owner = await createUser(ctx.sql, { orgId: org.id, role: "owner" });
    const member = await createUser(ctx.sql, { orgId: org.id, role: "member" });
    const role = async (userId: number) =>
      (await ctx.sql<{ role: string }[]>`select role from memberships where user_id = ${userId} and organization_id = ${org.id}`)[0]?.role;
    const removed = await admin("admin", "user", "remove", "--org", String(org.id), "--email", owner.email);
    expect([removed.code, removed.stderr]).toEqual([1, expect.stringContaining("would have no owner left")]);
    const demoted = await admin("admin", "user", "create", "--org", String(org.id), "--email", owner.email, "--password", "unused-password", "--role", "admin");
    expect(demoted.code).toBe(1);
    expect([await role(owner.id), await role(member.id)]).toEqual(["owner", "member"]);

    expect(
      (await admin("admin", "user", "create", "--org", String(org.id), "--email", member.email, "--password", "unused-password", "--role", "owner")).code,
    ).toBe(0);
    expect((await admin("admin", "user", "remove", "--org", String(org.id), "--email", owner.email)).code).toBe(0);
    expect((await admin("admin", "user", "remove", "--org", String(org.id), "--email", member.email)).code).toBe(0);
    expect(await ctx.sql`select 1 from memberships where organization_id = ${org.id}`).toHaveLength(0);
  });

  test("an organization's first member is its owner: --role admin or member for it is an error (exit 1), nothing added; a member is removed where no owner is left to keep", async () => {
    const org = await createOrg(ctx.sql);
    const email = `${crypto.randomUUID().slice(0, 8)}@example.test`;
    const first = await admin("admin", "user", "create", "--org", String(org.id), "--email", email, "--password", "long-password", "--role", "member");
    expect([first.code, first.stderr]).toEqual([1, expect.stringContaining("first member of organization")]);
    expect(await ctx.sql`select 1 from memberships where organization_id = ${org.id}`).toHaveLength(0);

    // An organization left without an owner by older data: removing a member is not refused for it.
    const ownerless = await createOrg(ctx.sql);
    const a = await createUser(ctx.sql, { orgId: ownerless.id, role: "member" });
    await createUser(ctx.sql, { orgId: ownerless.id, role: "admin" });
    const removed = await admin("admin", "user", "remove", "--org", String(ownerless.id), "--email", a.email);
    expect([removed.code, removed.stderr]).toEqual([0, ""]);
  });
});

describe("simhost admin jobs", () => {
  /** Dead jobs of a queue of the test's own (no server runs it), as the queue leaves them. */
  async function deadJobs(queue: string, n: number) {
    const rows = await ctx.sql<{ id: number }[]>`
      insert into jobs (queue, payload, attempts, max_attempts, dead, last_error, run_at)
      select ${queue}, jsonb_build_object('n', i), 10, 10, true, 'boom ' || i, now() - interval '1 hour' from generate_series(1, ${n}) i
      returning id`;
    return rows.map((r) => r.id);
  }
  const jobRows = (queue: string) =>
    ctx.sql<{ id: number; dead: boolean; attempts: number; due: boolean }[]>`
      select id, dead, attempts, run_at <= now() as due from jobs where queue = ${queue} order by id`;

  test("stats and dead show the queue's dead jobs; retry makes the named ones due from their first attempt; discard removes them", async () => {
    const queue = `test.${crypto.randomUUID()}`;
    const [a, b, c] = await deadJobs(queue, 3);
    await ctx.sql`insert into jobs (queue, payload) values (${queue}, '{}')`;

    const stats = await admin("admin", "jobs", "stats", "--json");
    expect(stats.code, stats.stderr).toBe(0);
    expect(stats.json().data.find((q: { queue: string }) => q.queue === queue)).toMatchObject({ queue, waiting: 1, running: 0, dead: 3 });
    const listed = await admin("admin", "jobs", "dead", "--queue", queue, "--json");
    expect(listed.json().data.map((j: { id: number; last_error: string; payload: object }) => [j.id, j.last_error, j.payload])).toEqual([
      [a, "boom 1", { n: 1 }],
      [b, "boom 2", { n: 2 }],
      [c, "boom 3", { n: 3 }],
    ]);
    const human = await admin("admin", "jobs", "dead", "--queue", queue, "--limit", "1");
    expect(human.stdout).toContain("LAST ERROR");
    expect(human.stdout).toContain("boom 1");
    expect(human.stdout).not.toContain("boom 2");

    const retried = await admin("admin", "jobs", "retry", String(a), "--json");
    expect([retried.code, retried.json()]).toEqual([0, { data: [a] }]);
    const rows = await jobRows(queue);
    expect(rows.find((r) => r.id === a)).toEqual({ id: a!, dead: false, attempts: 0, due: true });
    expect(rows.filter((r) => r.dead).map((r) => r.id)).toEqual([b!, c!]);

    // An id that is no dead job (the one just retried, an unknown one) is said, exit 1; the others are done.
    const partly = await admin("admin", "jobs", "discard", String(b), String(a), "987654321");
    expect(partly.code).toBe(1);
    expect(partly.stdout).toBe(`Discarded 1 dead job: ${b}.\n`);
    expect(partly.stderr).toBe(`Not dead jobs (unknown, or not dead): ${a}, 987654321.\n`);
    const all = await admin("admin", "jobs", "retry", "--queue", queue);
    expect([all.code, all.stdout]).toEqual([0, `Retrying 1 dead job: ${c}.\n`]);
    expect((await jobRows(queue)).map((r) => [r.id, r.dead])).toEqual([
      [a!, false],
      [c!, false],
      [expect.any(Number), false],
    ]);
  });

  test("retry and discard need exactly one of ids, --queue, --all (usage error, exit 2, nothing changed)", async () => {
    const queue = `test.${crypto.randomUUID()}`;
    const [id] = await deadJobs(queue, 1);
    // Each case once, the verbs taking turns (they share one definition).
    const cases: [string, string[]][] = [
      ["retry", []],
      ["discard", ["--queue", queue, "--all"]],
      ["retry", [String(id), "--all"]],
    ];
    for (const [verb, args] of cases) expect([verb, args, (await admin("admin", "jobs", verb, ...args)).code]).toEqual([verb, args, 2]);
    expect((await jobRows(queue)).map((r) => r.dead)).toEqual([true]);
  });
});
