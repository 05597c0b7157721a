import { createHash } from "node:crypto";
import type { Permission, Role } from "../../server/auth/caller";
import { createOrg, createUser, sessionFor, TEST_PASSWORD } from "../fixtures";
import { activeDevice, providerPost, registerDevice, smsBody } from "../fixtures-devices";
import { createPoolNumber } from "../fixtures-numbers";
import type { TestContext } from "../helpers";
import { cookieFrom, createOAuthClient, hiddenInputs } from "../integration/oauth-flow";
import { startReceiver } from "../integration/webhooks-helpers";

/**
 * Two organizations with full data, built through the HTTP API wherever the API offers a way
 * (users and pool numbers come from the operator's side, so they are written to the database).
 * Every name, alias and text carries a unique tag, so a response body can be scanned for
 * anything of the other organization.
 */
export const PERMISSION_SETS: Record<string, Permission[]> = {
  keyNone: [],
  keyNumbersRead: ["numbers.read"],
  keyNumbersLock: ["numbers.lock"],
  keyMessagesRead: ["messages.read"],
  keyWebhooks: ["webhooks.receive"],
  keyAll: ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"],
};
const ROLES: Role[] = ["owner", "admin", "member"];

export type Tenant = Awaited<ReturnType<typeof buildTenant>>;

async function ok(res: Promise<{ status: number; body: any; text: string }>, status: number, what: string) {
  const r = await res;
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
}

export async function buildTenant(ctx: TestContext, label: string, sharedSimId: number) {
  const tag = `${label}-${crypto.randomUUID().slice(0, 8)}`;
  const org = await createOrg(ctx.sql, { name: `Org ${tag}`, plan: "pro" });
  const users = {} as Record<Role, { id: number; email: string; token: string }>;
  for (const role of ROLES) {
    const user = await createUser(ctx.sql, { orgId: org.id, role, email: `${role}-${tag}@example.test`.toLowerCase(), name: `User ${role} ${tag}` });
    users[role] = { id: user.id, email: user.email, token: await sessionFor(ctx.sql, user.id) };
  }
  const owner = users.owner.token;
  const oauthMember = await oauthTokenFor(ctx, users.member.email, TEST_PASSWORD);
  const sessionIds = (await ctx.sql<{ id: number }[]>`select id from sessions where user_id = any(${Object.values(users).map((u) => u.id)}::bigint[])`).map(
    (r) => r.id,
  );
  const team = (await ok(ctx.request("POST", "/api/teams", { token: owner, body: { name: `Team ${tag}` } }), 201, "team")).data;
  await ok(ctx.request("POST", `/api/teams/${team.id}/members`, { token: owner, body: { user_id: users.member.id } }), 201, "team member");

  const keys: Record<string, { id: number; key: string }> = {};
  for (const [name, permissions] of Object.entries(PERMISSION_SETS)) {
    const made = await ok(ctx.request("POST", "/api/api-keys", { token: owner, body: { name: `${name} ${tag}`, permissions } }), 201, "api key");
    keys[name] = { id: made.api_key.id, key: made.plain_text_key };
  }

  // A BYOS device with a SIM verified through a signed provider callback, and a second one still pending.
  const byos = await activeDevice(ctx, owner);
  const pending = await registerDevice(ctx, owner, [1], { device_name: `Pending ${tag}` });
  const byosSim = (await ctx.sql<{ id: number }[]>`select id from hosted_sims where number = ${byos.numbers[0]!}`)[0]!;
  await ok(ctx.request("PATCH", `/api/numbers/${byosSim.id}/alias`, { token: owner, body: { alias: `Byos ${tag}` } }), 200, "byos alias");

  // The shared pool number, claimed by both organizations, each with its own alias and team.
  await ok(
    ctx.request("POST", "/api/numbers/claim-shared", { token: owner, body: { hosted_sim_id: sharedSimId, team_id: team.id, alias: `Shared ${tag}` } }),
    201,
    "claim-shared",
  );

  const receiver = startReceiver();
  const hook = await ok(
    // Every event type: an integration of one organization must never get another's events of any type.
    ctx.request("POST", "/api/webhook-integrations", { token: owner, body: { name: `Hook ${tag}`, url: `${receiver.url}/${tag}`, event_types: ["*"] } }),
    201,
    "integration",
  );
  receiver.secrets.push(hook.data.secret);
  const mapping = await ok(
    ctx.request("POST", `/api/webhook-integrations/${hook.data.id}/mappings`, { token: owner, body: { team_id: team.id, forwarding_mode: "always" } }),
    201,
    "mapping",
  );
  // A record in the integration's delivery log (the test event), for the routes that take one.
  await ok(ctx.request("POST", `/api/webhook-integrations/${hook.data.id}/test`, { token: owner }), 200, "test event");
  const logs = await ok(ctx.request("GET", `/api/webhook-integrations/${hook.data.id}/logs`, { token: owner }), 200, "logs");

  // An SMS on the BYOS number through the device, and an outbound message through it.
  const inboundText = `Inbound ${tag}`;
  await ok(ctx.request("POST", `/api/byos/devices/${byos.device.id}/sms`, { token: owner, body: smsBody({ body: inboundText }) }), 202, "device sms");
  const outboundText = `Outbound ${tag}`;
  const outbound = await ok(
    ctx.request("POST", "/api/messages", { token: owner, body: { hosted_sim: byosSim.id, to: "+15550002222", text: outboundText } }),
    202,
    "outbound",
  );
  // A bulk send (issue 19): its batch is the organization's alone.
  const batchText = `Batch ${tag}`;
  const batch = await ok(
    ctx.request("POST", "/api/messages", { token: owner, body: { hosted_sim: byosSim.id, to: ["+15550002223"], text: batchText } }),
    202,
    "bulk send",
  );

  return {
    sessionIds,
    label,
    tag,
    org,
    users,
    oauthMember,
    team,
    keys,
    device: byos.device,
    pendingDevice: pending,
    byosSim: { id: byosSim.id, number: byos.numbers[0]! },
    hook: { id: hook.data.id as number, secret: hook.data.secret as string, mappingId: mapping.data.id as number, logId: logs.data[0].id as number },
    receiver,
    inboundText,
    outboundId: outbound.data.id as number,
    outboundText,
    batchId: batch.data.batch_id as string,
    /** Texts of messages only this organization may ever see (filled in as the world is built). */
    privateTexts: [inboundText, outboundText, batchText],
  };
}

/** An OAuth access token through the sign-in page and the token endpoint, as the browser extension gets one. */
async function oauthTokenFor(ctx: TestContext, email: string, password: string): Promise<string> {
  const client = await createOAuthClient(ctx.sql);
  const verifier = `${crypto.randomUUID()}${crypto.randomUUID()}`;
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "isolation",
  });
  const page = await ctx.request("GET", `/oauth/authorize?${query}`);
  const cookie = cookieFrom(page.headers);
  const post = (form: Record<string, string>) => ctx.request("POST", "/oauth/authorize", { form, headers: { cookie } });
  const consent = await post({ ...hiddenInputs(page.text), email, password });
  const approved = await post({ ...hiddenInputs(consent.text), decision: "approve" });
  const code = new URL(approved.headers.get("location") ?? "http://x/").searchParams.get("code");
  const form = { grant_type: "authorization_code", code: code ?? "", redirect_uri: client.redirectUri, client_id: client.clientId, code_verifier: verifier };
  const tokens = await ctx.request("POST", "/oauth/token", { form });
  if (tokens.status !== 200) throw new Error(`oauth token: ${tokens.status} ${tokens.text}`);
  return tokens.body.access_token;
}

/** An SMS from the provider on the shared number. */
export async function providerSms(ctx: TestContext, to: string, text: string) {
  const res = await providerPost(ctx, {
    From: "+15550003333",
    To: to,
    Body: text,
    MessageSid: `SM${crypto.randomUUID().replaceAll("-", "")}`,
    AccountSid: "AC0123456789",
  });
  if (res.status !== 200) throw new Error(`provider sms: ${res.status} ${res.text}`);
}

export async function buildWorld(ctx: TestContext) {
  const shared = await createPoolNumber(ctx.sql, { maxOrgs: 5 });
  const a = await buildTenant(ctx, "A", shared.id);
  const b = await buildTenant(ctx, "B", shared.id);
  const run = crypto.randomUUID().slice(0, 8);
  const texts = { open: `Open before lock ${run}`, locked: `While A holds the lock ${run}`, after: `After unlock ${run}` };
  a.privateTexts.push(texts.locked);
  return { shared, a, b, texts };
}

/** On the shared number: one SMS for both, one while A holds the lock (A's alone for good), one after A unlocks; then A locks it again. */
export async function sendSharedMessages(ctx: TestContext, w: { shared: { id: number; number: string }; a: Tenant; texts: Record<string, string> }) {
  await providerSms(ctx, w.shared.number, w.texts.open!);
  await ok(ctx.request("POST", `/api/numbers/${w.shared.id}/lock`, { token: w.a.users.owner.token, body: { team_id: w.a.team.id } }), 200, "lock");
  await providerSms(ctx, w.shared.number, w.texts.locked!);
  await ok(ctx.request("POST", `/api/numbers/${w.shared.id}/unlock`, { token: w.a.users.owner.token }), 200, "unlock");
  await providerSms(ctx, w.shared.number, w.texts.after!);
  // A holds the lock again while the routes are probed: B must see `locked: true` and nothing of the holder.
  await ok(ctx.request("POST", `/api/numbers/${w.shared.id}/lock`, { token: w.a.users.owner.token, body: { team_id: w.a.team.id } }), 200, "lock again");
}

export type World = Awaited<ReturnType<typeof buildWorld>>;

/** Every credential of a tenant: a session of each role, an OAuth token (a member) and an API key of each permission set. */
export function credentialsOf(t: Tenant): Record<string, string> {
  const out: Record<string, string> = {};
  for (const role of ROLES) out[role] = t.users[role].token;
  out.oauthMember = t.oauthMember;
  for (const [name, k] of Object.entries(t.keys)) out[name] = k.key;
  return out;
}

/** Strings of `t` that no other organization may ever read. */
export function secretsOf(t: Tenant): string[] {
  return [
    t.tag,
    t.org.name,
    t.team.name,
    t.byosSim.number,
    t.hook.secret,
    ...Object.values(t.users).map((u) => u.email),
    ...Object.values(t.keys).map((k) => k.key),
    ...t.privateTexts,
  ];
}

/**
 * A user in two organizations (issue 15, item 1): a member of A, and the owner of a small
 * organization D with its own device and pool number; D also holds a seat on the shared number,
 * so that number is attached to both of the user's organizations. B is the third organization,
 * which the user must never reach.
 */
export async function buildBridge(ctx: TestContext, w: World) {
  const tag = `D-${crypto.randomUUID().slice(0, 8)}`;
  const d = await createOrg(ctx.sql, { name: `Org ${tag}`, plan: "pro" });
  const user = await createUser(ctx.sql, { orgId: w.a.org.id, role: "member", email: `bridge-${tag}@example.test`.toLowerCase() });
  await ctx.sql`insert into memberships (user_id, organization_id, role) values (${user.id}, ${d.id}, 'owner')`;
  const token = await sessionFor(ctx.sql, user.id);
  const inD = { "x-organization-id": String(d.id) };
  const device = (await ok(
    ctx.request("POST", "/api/byos/devices/register", { token, headers: inD, body: registration(`Device ${tag}`) }),
    201,
    "D device",
  )) as {
    id: number;
  };
  const own = await createPoolNumber(ctx.sql, { maxOrgs: 1 });
  await ok(ctx.request("POST", "/api/numbers/claim-shared", { token, headers: inD, body: { hosted_sim_id: own.id, alias: `Own ${tag}` } }), 201, "D number");
  await ok(
    ctx.request("POST", "/api/numbers/claim-shared", { token, headers: inD, body: { hosted_sim_id: w.shared.id, alias: `Shared ${tag}` } }),
    201,
    "D seat",
  );
  return { user, token, org: d, tag, device, number: own };
}

const registration = (name: string) => ({
  android_id: crypto.randomUUID().replaceAll("-", "").slice(0, 16),
  sim_slots: [1],
  device_model: "Pixel 8",
  app_version: "1.4.2",
  device_name: name,
});
