import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type Pusher from "pusher-js";
import { credentialsEpoch } from "../../server/auth/store";
import { issueSession } from "../../server/auth/tokens";
import { event } from "../../server/events/catalog";
import { storeInboundMessage } from "../../server/messages/inbound";
import { insertRefreshToken, linkAccessToken } from "../../server/oauth/store";
import { createApiKey, createTenant, createUser, sessionFor } from "../fixtures";
import { raiseEvents } from "../fixtures-events";
import { eventually } from "../fixtures-numbers";
import type { TestContext } from "../helpers";
import { createOAuthClient } from "../integration/oauth-flow";
import { awaitCallback, type ConnectionDetails, connectPusher, openRaw, startServer, stopServer, subscribed } from "./realtime-client";

let ctx: TestContext & { baseUrl: string; port: number };
let details: ConnectionDetails;
const clients: Pusher[] = [];

beforeAll(async () => {
  ctx = await startServer();
  ctx.services.start(); // job workers: message.received comes from the fan-out job
  const { token } = await createTenant(ctx.sql);
  details = (await ctx.request("GET", "/api/broadcasting/connection", { token })).body as ConnectionDetails;
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await stopServer(ctx);
});

/**
 * A pusher-js client subscribed to `channelName` with `token`, recording the texts of the
 * message.received events it gets; `ended()` resolves when the server ends it as
 * unauthorized (pusher:error 4009, then the socket closed: pusher-js gives up, channels unsubscribed).
 */
async function watch(token: string, channelName: string) {
  const pusher = connectPusher(ctx.baseUrl, details, token);
  clients.push(pusher);
  const errors: number[] = [];
  pusher.connection.bind("error", (e: any) => errors.push(e?.data?.code ?? e?.error?.data?.code));
  // Waited for only by the tests that end it (a pending timer would fail the others later).
  const ended = () =>
    awaitCallback<void>("the subscription to end", (done) => {
      if (pusher.connection.state === "disconnected") return done();
      pusher.connection.bind("state_change", (s: { current: string }) => s.current === "disconnected" && done());
    });
  const channel = await subscribed(pusher, channelName);
  const texts: string[] = [];
  channel.bind("message.received", (e: any) => texts.push(e.message.text));
  return { pusher, channel, texts, errors, ended };
}

type Watched = Awaited<ReturnType<typeof watch>>;

async function expectEnded(w: Watched) {
  await w.ended();
  expect(w.errors).toContain(4009);
  expect(w.channel.subscribed).toBe(false);
}

/** Publishes a message.received to the channel; resolves once `control` got it (so `others` would have too). */
async function publishSeenBy(channel: string, text: string, control: Watched) {
  const seen = awaitCallback("the control client's event", (done) =>
    control.channel.bind("message.received", (e: any) => e.message.text === text && done(undefined)),
  );
  // The organization channel's id: the event's row belongs to that organization.
  const organizationId = Number(channel.slice(channel.lastIndexOf(".") + 1));
  await raiseEvents(ctx.services, [
    event.messageReceived({ organizationId }, { message: { id: 1, text }, hosted_sim: { id: 1, number: "+1", alias: null }, team: null } as never),
  ]);
  await seen;
}

/**
 * OAuth tokens as the token endpoint issues them (a grant, an access token linked to it, a refresh
 * token), made in the database; refresh and revoke then go through /oauth/token and /oauth/revoke.
 */
async function oauthTokens(userId: number) {
  const client = await createOAuthClient(ctx.sql);
  const [clientRow] = await ctx.sql<{ id: number }[]>`select id from oauth_clients where client_id = ${client.clientId}`;
  return ctx.sql.begin(async (tx) => {
    const [grant] = await tx<{ id: string }[]>`insert into oauth_grants (client_id, user_id) values (${clientRow!.id}, ${userId}) returning id`;
    const grantId = grant!.id;
    const epoch = (await credentialsEpoch(tx, userId))!;
    const access = (await issueSession(tx, userId, { kind: "oauth", ttlSeconds: 3600, epoch }))!;
    await linkAccessToken(tx, access.id, grantId);
    const refresh = await insertRefreshToken(tx, grantId, 3600);
    return { clientId: client.clientId, accessToken: access.token, accessId: access.id, refresh };
  });
}
const oauthForm = (path: string, form: Record<string, string>) => ctx.request("POST", path, { form });

describe("an OAuth grant's subscriptions outlive its access tokens, not its revocation", () => {
  test("the token it subscribed with refreshed, expired and removed by retention: revoking the grant still ends the subscription", async () => {
    const { org, user } = await createTenant(ctx.sql);
    const t = await oauthTokens(user.id);
    const channel = `private-organization.${org.id}`;
    const byExtension = await watch(t.accessToken, channel);
    const refreshed = await oauthForm("/oauth/token", { grant_type: "refresh_token", refresh_token: t.refresh, client_id: t.clientId });
    expect(refreshed.status).toBe(200);
    // The hourly retention job removes the first access token's row a day after it expired.
    await ctx.sql`delete from sessions where id = ${t.accessId}`;
    const revoked = await oauthForm("/oauth/revoke", { token: refreshed.body.refresh_token, client_id: t.clientId });
    expect(revoked.status).toBe(200);
    await expectEnded(byExtension);
  });

  test("a re-check of everything keeps a subscription whose token only expired while its grant lives, and ends one whose grant was revoked", async () => {
    const { org, user, token } = await createTenant(ctx.sql);
    const [live, gone] = [await oauthTokens(user.id), await oauthTokens(user.id)];
    const channel = `private-organization.${org.id}`;
    const [byLive, byGone] = [await watch(live.accessToken, channel), await watch(gone.accessToken, channel)];
    const owner = await watch(token, channel);
    await ctx.sql`update sessions set expires_at = now() - interval '1 minute' where id in ${ctx.sql([live.accessId, gone.accessId])}`;
    await ctx.sql`update oauth_grants set revoked_at = now() where id = (select grant_id from oauth_access_tokens where session_id = ${gone.accessId})`;
    ctx.services.auth.revoke({ everything: true });
    await expectEnded(byGone);
    await publishSeenBy(channel, "after the re-check", owner);
    await eventually(() => byLive.texts.includes("after the re-check"), 5000, "the live grant's subscription to receive it");
    expect(byLive.errors).toEqual([]);
  });
});

describe("revoking a credential ends the subscriptions it authorized", () => {
  test("an API key deleted: its subscription stops receiving message.received; the owner's goes on", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["messages.read"]);
    const [sim] = await ctx.sql<{ id: number }[]>`
      insert into hosted_sims (number, provider, type, shared_max_orgs)
      values (${`+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`}, 'test', 'shared', 5) returning id`;
    await ctx.sql`insert into hosted_sim_organizations (hosted_sim_id, organization_id) values (${sim!.id}, ${org.id})`;
    const channel = `private-organization.${org.id}`;
    const byKey = await watch(key.key, channel);
    const owner = await watch(token, channel);
    const store = async (text: string) => {
      const seen = awaitCallback("the owner's message.received", (done) =>
        owner.channel.bind("message.received", (e: any) => e.message.text === text && done(undefined)),
      );
      await ctx.sql.begin((tx) => storeInboundMessage(tx, { hostedSimId: sim!.id, from: "+15550001111", text, source: "provider", receivedAt: new Date() }));
      ctx.services.events.notify();
      await seen;
    };
    await store("before");
    expect(byKey.texts).toEqual(["before"]);

    expect((await ctx.request("DELETE", `/api/api-keys/${key.id}`, { token })).status).toBe(204);
    await expectEnded(byKey);
    await store("after");
    expect(byKey.texts).toEqual(["before"]);
    expect(owner.texts).toEqual(["before", "after"]);
  });

  test("an API key renamed with its permissions sent again, in another order: its subscription goes on (only a changed set ends it)", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["numbers.read", "messages.read"]);
    const channel = `private-organization.${org.id}`;
    const byKey = await watch(key.key, channel);
    const owner = await watch(token, channel);
    const renamed = await ctx.request("PATCH", `/api/api-keys/${key.id}`, { token, body: { name: "renamed", permissions: ["messages.read", "numbers.read"] } });
    expect(renamed.status).toBe(200);
    await publishSeenBy(channel, "after the rename", owner);
    await eventually(() => byKey.texts.includes("after the rename"), 5000, "the key's subscription to receive it");
    expect(byKey.errors).toEqual([]);
    expect(byKey.channel.subscribed).toBe(true);
  });

  test("an API key regenerated: the old key's subscription ends, the new key subscribes and receives", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["messages.read"]);
    const channel = `private-organization.${org.id}`;
    const old = await watch(key.key, channel);
    const regenerated = await ctx.request("POST", `/api/api-keys/${key.id}/regenerate`, { token });
    expect(regenerated.status).toBe(200);
    await expectEnded(old);
    const fresh = await watch(regenerated.body.plain_text_key, channel);
    await publishSeenBy(channel, "after regenerate", fresh);
    expect(old.texts).toEqual([]);
    expect(fresh.texts).toEqual(["after regenerate"]);
  });

  test("logout: the session's subscription ends; another session of the same user keeps its own", async () => {
    const { org, user, token } = await createTenant(ctx.sql);
    const second = await sessionFor(ctx.sql, user.id);
    const channel = `private-organization.${org.id}`;
    const leaving = await watch(second, channel);
    const staying = await watch(token, channel);
    expect((await ctx.request("POST", "/api/auth/logout", { token: second })).status).toBe(204);
    await expectEnded(leaving);
    await publishSeenBy(channel, "after logout", staying);
    expect(leaving.texts).toEqual([]);
    expect(staying.pusher.connection.state).toBe("connected");
  });

  test("a membership removed: the user's subscriptions for that organization end, those for their other organization stay", async () => {
    const a = await createTenant(ctx.sql);
    const b = await createTenant(ctx.sql);
    const user = await createUser(ctx.sql, { orgId: a.org.id, role: "member" });
    await ctx.sql`insert into memberships (user_id, organization_id, role) values (${user.id}, ${b.org.id}, 'member')`;
    const token = await sessionFor(ctx.sql, user.id);
    const inA = await watch(token, `private-organization.${a.org.id}`);
    const inB = await watch(token, `private-organization.${b.org.id}`);
    await ctx.sql`delete from memberships where user_id = ${user.id} and organization_id = ${a.org.id}`;
    ctx.services.auth.revoke({ userId: user.id, organizationId: a.org.id });
    await expectEnded(inA);
    await publishSeenBy(`private-organization.${b.org.id}`, "still a member of B", inB);
  });

  test("authorized, then revoked before subscribing: the subscription is refused (401), not granted on a dead credential", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, []);
    const raw = await openRaw(`ws://127.0.0.1:${ctx.port}/app/${details.key}?protocol=7`);
    const socketId = (await raw.event("pusher:connection_established")).data.socket_id;
    const channel = `private-organization.${org.id}`;
    const auth = await ctx.request("POST", "/api/broadcasting/auth", { token: key.key, body: { socket_id: socketId, channel_name: channel } });
    expect(auth.status).toBe(200);
    expect((await ctx.request("DELETE", `/api/api-keys/${key.id}`, { token })).status).toBe(204);
    raw.send({ event: "pusher:subscribe", data: { channel, auth: auth.body.auth } });
    const refused = await raw.next((f) => f.channel === channel);
    expect(refused).toMatchObject({ event: "pusher:subscription_error", data: { status: 401 } });
    raw.ws.close();
  });

  test("authorized, then the key's permissions changed before subscribing: refused (401), no message events with the old grant", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["messages.read", "numbers.read"]);
    const raw = await openRaw(`ws://127.0.0.1:${ctx.port}/app/${details.key}?protocol=7`);
    const socketId = (await raw.event("pusher:connection_established")).data.socket_id;
    const channel = `private-organization.${org.id}`;
    const auth = await ctx.request("POST", "/api/broadcasting/auth", { token: key.key, body: { socket_id: socketId, channel_name: channel } });
    expect(auth.status).toBe(200);
    expect((await ctx.request("PATCH", `/api/api-keys/${key.id}`, { token, body: { permissions: ["numbers.read"] } })).status).toBe(200);
    raw.send({ event: "pusher:subscribe", data: { channel, auth: auth.body.auth } });
    expect(await raw.next((f) => f.channel === channel)).toMatchObject({ event: "pusher:subscription_error", data: { status: 401 } });
    raw.ws.close();
  });

  test("a second subscribe while the first is checked gets the first's answer only (it was told 'succeeded', then the first was refused)", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["messages.read"]);
    const raw = await openRaw(`ws://127.0.0.1:${ctx.port}/app/${details.key}?protocol=7`);
    const socketId = (await raw.event("pusher:connection_established")).data.socket_id;
    const channel = `private-organization.${org.id}`;
    const auth = await ctx.request("POST", "/api/broadcasting/auth", { token: key.key, body: { socket_id: socketId, channel_name: channel } });
    expect((await ctx.request("DELETE", `/api/api-keys/${key.id}`, { token })).status).toBe(204);
    raw.send({ event: "pusher:subscribe", data: { channel, auth: auth.body.auth } });
    raw.send({ event: "pusher:subscribe", data: { channel, auth: auth.body.auth } });
    const first = await raw.next((f) => f.channel === channel);
    // Frames are answered in order: whatever the repeat drew has arrived before this pong.
    raw.send({ event: "pusher:ping", data: {} });
    await raw.event("pusher:pong");
    const repeat = await raw.next((f) => f.channel === channel, 1).catch(() => null);
    expect([first.event, repeat?.event]).toEqual(["pusher:subscription_error", undefined]);
    raw.ws.close();
  });

  test("everything: a key whose permissions changed behind this instance's back is ended too", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, ["messages.read"]);
    const channel = `private-organization.${org.id}`;
    const byKey = await watch(key.key, channel);
    const owner = await watch(token, channel);
    await ctx.sql`update api_keys set permissions = ${["numbers.read"]} where id = ${key.id}`;
    ctx.services.auth.revoke({ everything: true });
    await expectEnded(byKey);
    await publishSeenBy(channel, "after the re-check of permissions", owner);
    expect(byKey.texts).not.toContain("after the re-check of permissions");
  });

  test("everything (revocations possibly missed): every subscription is checked again, only dead credentials end", async () => {
    const { org, token } = await createTenant(ctx.sql);
    const key = await createApiKey(ctx.sql, org.id, []);
    const channel = `private-organization.${org.id}`;
    const byKey = await watch(key.key, channel);
    const owner = await watch(token, channel);
    // Deleted behind the API's back: no revocation names it.
    await ctx.sql`delete from api_keys where id = ${key.id}`;
    ctx.services.auth.revoke({ everything: true });
    await expectEnded(byKey);
    await publishSeenBy(channel, "after the re-check", owner);
    expect(owner.pusher.connection.state).toBe("connected");
  });
});
