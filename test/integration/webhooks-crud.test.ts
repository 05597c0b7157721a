import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AppError } from "../../server/errors";
import { generateSigningSecret } from "../../server/webhooks/secrets";
import { insertIntegration, insertMapping, MAX_INTEGRATIONS } from "../../server/webhooks/store";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { createTestContext, expectErrorShape, sharedTestContext, type TestContext } from "../helpers";
import { createNumber, createTeam, logsOf, receiveSms, startReceiver, waitFor } from "./webhooks-helpers";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await sharedTestContext();
}, 60_000);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const create = (token: string, body: Record<string, unknown> = {}) =>
  ctx.request("POST", "/api/webhook-integrations", { token, body: { name: "Hook", url: "https://example.com/hook", ...body } });

describe("webhook integrations", () => {
  test("create answers 201 with the exact message, defaults and a whsec_ secret shown once", async () => {
    const { token } = await createTenant(ctx.sql);
    const res = await create(token, { headers: { "X-Api-Token": "abc" } });
    expect(res.status).toBe(201);
    expect(res.body.message).toBe("Webhook integration created successfully.");
    const d = res.body.data;
    expect(d).toMatchObject({
      name: "Hook",
      url: "https://example.com/hook",
      has_secret: true,
      headers: { "X-Api-Token": "abc" },
      timeout_seconds: 30,
      retry_count: 3,
      is_active: true,
      mappings: [],
    });
    expect(d.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(d.created_at).toMatch(ISO);
    const shown = await ctx.request("GET", `/api/webhook-integrations/${d.id}`, { token });
    expect(shown.status).toBe(200);
    expect(shown.body.data.secret).toBeUndefined();
    expect(shown.body.data.has_secret).toBe(true);
    const [row] = await ctx.sql<{ secret_sealed: string }[]>`select secret_sealed from webhook_integrations where id = ${d.id}`;
    expect(row!.secret_sealed).not.toContain(d.secret.slice(6));
  }, 30_000);

  test("list answers data and organization; update, regenerate and delete answer SPEC messages", async () => {
    const { token, org } = await createTenant(ctx.sql);
    const { body } = await create(token);
    const id = body.data.id;
    const list = await ctx.request("GET", "/api/webhook-integrations", { token });
    expect(list.body.organization).toEqual({ id: org.id, name: org.name });
    expect(list.body.data.map((i: any) => i.id)).toEqual([id]);

    const upd = await ctx.request("PATCH", `/api/webhook-integrations/${id}`, {
      token,
      body: { name: "Renamed", url: "https://example.org/x", timeout_seconds: 5, is_active: false },
    });
    expect(upd.status).toBe(200);
    expect(upd.body.message).toBe("Webhook integration updated successfully.");
    expect(upd.body.data).toMatchObject({ name: "Renamed", url: "https://example.org/x", timeout_seconds: 5, retry_count: 3, is_active: false });

    const regen = await ctx.request("POST", `/api/webhook-integrations/${id}/regenerate-secret`, { token });
    expect(regen.status).toBe(200);
    expect(regen.body.message).toBe("Webhook secret regenerated successfully.");
    expect(Object.keys(regen.body.data).sort()).toEqual(["id", "name", "secret", "updated_at"]);
    expect(regen.body.data.secret).not.toBe(body.data.secret);

    const del = await ctx.request("DELETE", `/api/webhook-integrations/${id}`, { token });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ message: "Webhook integration deleted successfully." });
    expect((await ctx.request("GET", `/api/webhook-integrations/${id}`, { token })).status).toBe(404);
  }, 30_000);

  test("bounds of SPEC.md part 8 answer 422 with per-field errors", async () => {
    const { token } = await createTenant(ctx.sql);
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "x".repeat(256) }, "name"],
      [{ url: `https://example.com/${"a".repeat(2040)}` }, "url"],
      [{ timeout_seconds: 0 }, "timeout_seconds"],
      [{ timeout_seconds: 121 }, "timeout_seconds"],
      [{ retry_count: 11 }, "retry_count"],
      [{ retry_count: -1 }, "retry_count"],
      [{ retry_count: "3" }, "retry_count"],
      [{ url: "ftp://example.com" }, "url"],
      [{ url: "not a url" }, "url"],
      [{ headers: { "bad header": "x" } }, "headers.bad header"],
      [{ headers: { "Webhook-Signature": "v1,forged" } }, "headers.Webhook-Signature"],
      [{ headers: { "X-A": "a\r\nX-B: b" } }, "headers.X-A"],
      [{ headers: { "X-N": 5 } }, "headers.X-N"],
      // One header in two spellings would reach the receiver as one, both values joined.
      [{ headers: { "X-A": "1", "x-a": "2" } }, "headers.x-a"],
      // Stored as sent, the URL shown would not be where deliveries go (the parser drops these).
      [{ url: "  https://example.com/hook  " }, "url"],
      [{ url: "https://example.com/a\nb" }, "url"],
      [{ url: "https://exa\tmple.com/t" }, "url"],
      // Sent by the test route only, never from the log: a subscription to it would never deliver.
      [{ event_types: ["message.received", "webhook.test"] }, "event_types.1"],
    ];
    for (const [body, field] of cases) {
      const res = await create(token, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expectErrorShape(res.body, "validation_failed");
      expect(Object.keys(res.body.errors)).toContain(field);
    }
    const missing = await ctx.request("POST", "/api/webhook-integrations", { token, body: {} });
    expect(Object.keys(missing.body.errors).sort()).toEqual(["name", "url"]);
    const limits = await create(token, { name: "x".repeat(255), timeout_seconds: 120, retry_count: 0 });
    expect(limits.status).toBe(201);
    const update = await ctx.request("PATCH", `/api/webhook-integrations/${limits.body.data.id}`, { token, body: { is_active: true } });
    expect(update.status).toBe(422);
  }, 30_000);

  test("an organization has at most 100 integrations: the 101st is 409 invalid_state, a deleted one frees its place", async () => {
    const { token, org } = await createTenant(ctx.sql);
    const first = await create(token);
    expect(first.status).toBe(201);
    await ctx.sql`
      insert into webhook_integrations (organization_id, name, url, headers, timeout_seconds, retry_count, event_types, secret_sealed)
      select ${org.id}, 'Hook ' || g, 'https://example.com/hook', '{}'::jsonb, 10, 3, '{}'::text[], secret_sealed
      from webhook_integrations, generate_series(2, ${MAX_INTEGRATIONS}) g where id = ${first.body.data.id}`;
    const over = await create(token);
    expect(over.status).toBe(409);
    expectErrorShape(over.body, "invalid_state");
    expect(over.body.message).toContain(`at most ${MAX_INTEGRATIONS}`);
    expect((await ctx.request("GET", "/api/webhook-integrations", { token })).body.data).toHaveLength(MAX_INTEGRATIONS);
    expect((await create((await createTenant(ctx.sql)).token)).status).toBe(201);
    expect((await ctx.request("DELETE", `/api/webhook-integrations/${first.body.data.id}`, { token })).status).toBe(200);
    expect((await create(token)).status).toBe(201);
  }, 30_000);

  test("another organization's integration is 404 on every operation", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const id = (await create(a.token)).body.data.id;
    const base = `/api/webhook-integrations/${id}`;
    for (const [method, path, body] of [
      ["GET", base],
      ["PATCH", base, { name: "n", url: "https://example.com" }],
      ["DELETE", base],
      ["POST", `${base}/regenerate-secret`],
      ["POST", `${base}/test`],
      ["GET", `${base}/logs`],
      ["GET", `${base}/mappings`],
      ["POST", `${base}/mappings`, { team_id: 1, forwarding_mode: "always" }],
    ] as const) {
      const res = await ctx.request(method, path, { token: b.token, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expectErrorShape(res.body, "not_found");
    }
    expect((await ctx.request("GET", "/api/webhook-integrations", { token: b.token })).body.data).toEqual([]);
  }, 30_000);

  test("API keys need webhooks.receive, which allows changes too; members read but do not change", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const id = (await create(token)).body.data.id;
    const without = await createApiKey(ctx.sql, org.id, ["numbers.read", "messages.read"]);
    const res = await ctx.request("GET", "/api/webhook-integrations", { token: without.key });
    expect(res.status).toBe(403);
    expectErrorShape(res.body, "permission_denied");
    expect((await create(without.key)).status).toBe(403);

    const withPerm = await createApiKey(ctx.sql, org.id, ["webhooks.receive"]);
    expect((await ctx.request("GET", "/api/webhook-integrations", { token: withPerm.key })).status).toBe(200);
    expect((await create(withPerm.key)).status).toBe(201);
    expect((await ctx.request("POST", `/api/webhook-integrations/${id}/regenerate-secret`, { token: withPerm.key })).status).toBe(200);

    const member = await createUser(ctx.sql, { orgId: org.id, role: "member" });
    const memberToken = await sessionFor(ctx.sql, member.id);
    expect((await ctx.request("GET", `/api/webhook-integrations/${id}`, { token: memberToken })).status).toBe(200);
    const denied = await create(memberToken);
    expect(denied.status).toBe(403);
    expectErrorShape(denied.body, "permission_denied");
    expect((await ctx.request("GET", "/api/webhook-integrations")).status).toBe(401);
  }, 30_000);
});

describe("webhook mappings", () => {
  test("create, list, show, update, delete with SPEC messages; team_name shown", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, org.id, "Support");
    const id = (await create(token)).body.data.id;
    const base = `/api/webhook-integrations/${id}/mappings`;
    const made = await ctx.request("POST", base, { token, body: { team_id: team.id, forwarding_mode: "lock_required" } });
    expect(made.status).toBe(201);
    expect(made.body.message).toBe("Webhook mapping created successfully.");
    expect(made.body.data).toMatchObject({ team_id: team.id, team_name: "Support", forwarding_mode: "lock_required", is_active: true });
    expect(made.body.data.created_at).toMatch(ISO);
    const mid = made.body.data.id;

    const list = await ctx.request("GET", base, { token });
    expect(list.body.webhook_integration).toEqual({ id, name: "Hook" });
    expect(list.body.data).toHaveLength(1);
    expect((await ctx.request("GET", `${base}/${mid}`, { token })).body.data.id).toBe(mid);
    const shown = await ctx.request("GET", `/api/webhook-integrations/${id}`, { token });
    expect(shown.body.data.mappings).toEqual([made.body.data]);

    const dup = await ctx.request("POST", base, { token, body: { team_id: team.id, forwarding_mode: "always" } });
    expect(dup.status).toBe(409);

    const upd = await ctx.request("PATCH", `${base}/${mid}`, { token, body: { forwarding_mode: "always", is_active: false } });
    expect(upd.body.message).toBe("Webhook mapping updated successfully.");
    expect(upd.body.data).toMatchObject({ forwarding_mode: "always", is_active: false });
    expect((await ctx.request("PATCH", `${base}/${mid}`, { token, body: { forwarding_mode: "sometimes" } })).status).toBe(422);

    const del = await ctx.request("DELETE", `${base}/${mid}`, { token });
    expect(del.body).toEqual({ message: "Webhook mapping deleted successfully." });
    expect((await ctx.request("GET", `${base}/${mid}`, { token })).status).toBe(404);
  }, 30_000);

  test("a team of another organization, or no team, is 404; deleting the team removes its mappings", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const foreign = await createTeam(ctx.sql, b.org.id);
    const id = (await create(a.token)).body.data.id;
    const base = `/api/webhook-integrations/${id}/mappings`;
    expect((await ctx.request("POST", base, { token: a.token, body: { team_id: foreign.id, forwarding_mode: "always" } })).status).toBe(404);
    expect((await ctx.request("POST", base, { token: a.token, body: { team_id: 999999999, forwarding_mode: "always" } })).status).toBe(404);
    const own = await createTeam(ctx.sql, a.org.id);
    await ctx.request("POST", base, { token: a.token, body: { team_id: own.id, forwarding_mode: "always" } });
    await ctx.sql`delete from teams where id = ${own.id}`;
    expect((await ctx.request("GET", base, { token: a.token })).body.data).toEqual([]);
  }, 30_000);
});

describe("team view /api/teams/{team}/webhooks", () => {
  test("create makes the integration and its mapping; list, patch, test, logs, delete removes the mapping only", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, org.id);
    const other = await createTeam(ctx.sql, org.id);
    const made = await ctx.request("POST", `/api/teams/${team.id}/webhooks`, { token, body: { name: "T", url: "https://example.com/t" } });
    expect(made.status).toBe(201);
    expect(made.body.message).toBe("Webhook integration created successfully.");
    expect(made.body.data.secret).toStartWith("whsec_");
    expect(made.body.data.mappings).toMatchObject([{ team_id: team.id, forwarding_mode: "always" }]);
    const id = made.body.data.id;

    const list = await ctx.request("GET", `/api/teams/${team.id}/webhooks`, { token });
    expect(list.body.team).toEqual({ id: team.id, name: team.name });
    expect(list.body.data.map((i: any) => i.id)).toEqual([id]);
    expect((await ctx.request("GET", `/api/teams/${other.id}/webhooks`, { token })).body.data).toEqual([]);
    expect((await ctx.request("GET", `/api/teams/${other.id}/webhooks/${id}/logs`, { token })).status).toBe(404);

    const upd = await ctx.request("PATCH", `/api/teams/${team.id}/webhooks/${id}`, {
      token,
      body: { name: "T2", url: "https://example.com/t2", forwarding_mode: "lock_required" },
    });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ name: "T2", mappings: [{ forwarding_mode: "lock_required" }] });

    const logs = await ctx.request("GET", `/api/teams/${team.id}/webhooks/${id}/logs`, { token });
    expect(logs.status).toBe(200);
    expect(logs.body.meta.total).toBe(0);

    const del = await ctx.request("DELETE", `/api/teams/${team.id}/webhooks/${id}`, { token });
    expect(del.body).toEqual({ message: "Webhook mapping deleted successfully." });
    expect((await ctx.request("GET", `/api/webhook-integrations/${id}`, { token })).body.data.mappings).toEqual([]);
  }, 30_000);

  test("another organization's team is 404", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, a.org.id);
    expect((await ctx.request("GET", `/api/teams/${team.id}/webhooks`, { token: b.token })).status).toBe(404);
    const res = await ctx.request("POST", `/api/teams/${team.id}/webhooks`, { token: b.token, body: { name: "x", url: "https://example.com" } });
    expect(res.status).toBe(404);
  }, 30_000);
});

describe("SSRF guard at create and update (WEBHOOK_ALLOW_PRIVATE=false)", () => {
  let guarded: TestContext;
  beforeAll(async () => {
    guarded = await createTestContext({ WEBHOOK_ALLOW_PRIVATE: "false" });
  }, 60_000);
  afterAll(async () => {
    await guarded?.close();
  });

  /**
   * An integration as an earlier create stored it (the guard does not judge it here): a target
   * that was allowed then and is refused now. Loopback only: no test names another address.
   */
  async function stored(organizationId: number, url: string, retryCount = 3) {
    const fields = { name: "x", url, headers: {}, timeout_seconds: 30, retry_count: retryCount, event_types: ["message.received"] };
    return (await insertIntegration(guarded.sql, organizationId, fields, await guarded.services.secrets.seal(generateSigningSecret())))!;
  }

  test("loopback, private, mapped, metadata and names resolving to loopback are refused with 422", async () => {
    const { org, token } = await createTenant(guarded.sql);
    for (const url of [
      "http://127.0.0.1/hook",
      "http://10.0.0.1/",
      "http://[::ffff:127.0.0.1]/",
      "http://169.254.169.254/latest/meta-data",
      "http://localhost:8080/",
      "http://[::1]/",
      "http://100.64.1.1/",
      "http://0.0.0.0/",
    ]) {
      const res = await guarded.request("POST", "/api/webhook-integrations", { token, body: { name: "x", url } });
      expect(res.status, url).toBe(422);
      expectErrorShape(res.body, "validation_failed");
      expect(res.body.errors.url[0]).toContain("not allowed");
    }
    const id = await stored(org.id, "http://127.0.0.1:9/hook");
    const moved = await guarded.request("PATCH", `/api/webhook-integrations/${id}`, { token, body: { name: "x", url: "http://192.168.0.10/" } });
    expect(moved.status).toBe(422);
  }, 30_000);

  test("an update that keeps a URL now refused still pauses, resumes and renames the integration (the URL is judged when it changes, and at every delivery)", async () => {
    const { org, token } = await createTenant(guarded.sql);
    const id = await stored(org.id, "http://127.0.0.1:9/hook");
    const patch = (body: object) => guarded.request("PATCH", `/api/webhook-integrations/${id}`, { token, body });
    const paused = await patch({ name: "renamed", url: "http://127.0.0.1:9/hook", is_active: false });
    expect([paused.status, paused.body.data?.is_active, paused.body.data?.name]).toEqual([200, false, "renamed"]);
    expect((await patch({ name: "renamed", url: "http://127.0.0.1:9/hook", is_active: true })).status).toBe(200);
    expect((await patch({ name: "renamed", url: "http://127.0.0.1:9/other" })).status).toBe(422);
  }, 30_000);

  test("a delivery to an address that became internal after create is refused at send time", async () => {
    const { org, token } = await createTenant(guarded.sql);
    const team = await createTeam(guarded.sql, org.id);
    const receiver = startReceiver();
    const id = await stored(org.id, receiver.url, 0);
    await insertMapping(guarded.sql, id, team.id, "always");
    const sim = await createNumber(guarded.sql, [{ orgId: org.id, teamId: team.id }]);
    guarded.services.start();
    await receiveSms(guarded, sim.id);
    const log = await waitFor(async () => (await logsOf(guarded, token, id)).data[0]);
    expect(log).toMatchObject({ status: "failed", http_status: null });
    expect(log.error).toContain("target refused: resolves to a loopback address");
    expect(receiver.received).toHaveLength(0);
    receiver.stop();
  }, 30_000);

  test("the test event to a refused address answers success false, never a 500", async () => {
    const { org, token } = await createTenant(guarded.sql);
    const id = await stored(org.id, "http://127.0.0.1:9/");
    const res = await guarded.request("POST", `/api/webhook-integrations/${id}/test`, { token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: false, http_status: 0 });
    expect(res.body.error).toContain("loopback");
  }, 30_000);
});

describe("a team deleted between the check and the insert (a concurrent DELETE /api/teams/{id})", () => {
  test("a mapping to it answers 404 Team, not a 500", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const team = await createTeam(ctx.sql, org.id);
    const created = await ctx.request("POST", "/api/webhook-integrations", { token, body: { name: "hook", url: "http://127.0.0.1:9/hook" } });
    await ctx.sql`delete from teams where id = ${team.id}`;
    const refused = await insertMapping(ctx.sql, created.body.data.id, team.id, "always").catch((e) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect([refused.status, refused.code]).toEqual([404, "not_found"]);
  });
});
