import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { credentialsEpoch } from "../../server/auth/store";
import { randomString } from "../../server/lib/crypto";
import { findClient, insertCode } from "../../server/oauth/store";
import { createApiKey, createTenant, sessionFor } from "../fixtures";
import { createTestContext, freshDatabase, type TestContext } from "../helpers";
import { createOAuthClient } from "../integration/oauth-flow";

/**
 * Issue 14 defect 3: after the revoking request has answered, no request with the old
 * credential succeeds, on any instance. Each round warms the caller cache, starts lookups that
 * miss the cache (another X-Organization-Id spelling is another cache key) so they are in flight
 * while the revocation commits, revokes, and the moment the answer arrives uses the old
 * credential on every instance and every cache key.
 */
/**
 * 300 rounds on PostgreSQL (the same-instance and the cross-instance race); 100 on the embedded
 * database, which serves one transaction at a time (a round costs five times as much there: 73 s
 * for 300 in CI) and whose same-instance race the PostgreSQL half runs in full as well.
 */
const ROUNDS = process.env.DATABASE_URL ? 300 : 100;
const KINDS = ["regenerate key", "delete key", "logout", "oauth revoke"] as const;

type Instance = TestContext;
type Round = { credential: string; orgId: number; revoke: () => Promise<number> };

/** An OAuth access token and its refresh token, through the token endpoint (the consent page is tested elsewhere). */
async function oauthTokens(instance: Instance, userId: number) {
  const client = await createOAuthClient(instance.sql);
  const verifier = randomString(64);
  const code = await insertCode(instance.sql, {
    clientId: (await findClient(instance.sql, client.clientId))!.id,
    userId,
    epoch: (await credentialsEpoch(instance.sql, userId))!,
    redirectUri: client.redirectUri,
    codeChallenge: createHash("sha256").update(verifier).digest("base64url"),
    ttlSeconds: 60,
  });
  const form = { grant_type: "authorization_code", code: code!, redirect_uri: client.redirectUri, client_id: client.clientId, code_verifier: verifier };
  const res = await instance.request("POST", "/oauth/token", { form });
  expect(res.status).toBe(200);
  return { clientId: client.clientId, access: res.body.access_token as string, refresh: res.body.refresh_token as string };
}

async function setUpRound(revoker: Instance, kind: (typeof KINDS)[number]): Promise<Round> {
  const tenant = await createTenant(revoker.sql);
  if (kind === "oauth revoke") {
    // RFC 7009: revoking the refresh token revokes its grant, the access token with it.
    const t = await oauthTokens(revoker, tenant.user.id);
    const form = { token: t.refresh, client_id: t.clientId };
    return { credential: t.access, orgId: tenant.org.id, revoke: async () => (await revoker.request("POST", "/oauth/revoke", { form })).status };
  }
  if (kind === "logout") {
    const token = await sessionFor(revoker.sql, tenant.user.id);
    return { credential: token, orgId: tenant.org.id, revoke: async () => (await revoker.request("POST", "/api/auth/logout", { token })).status };
  }
  const key = await createApiKey(revoker.sql, tenant.org.id, ["numbers.read"]);
  const revoke =
    kind === "delete key"
      ? async () => (await revoker.request("DELETE", `/api/api-keys/${key.id}`, { token: tenant.token })).status
      : async () => (await revoker.request("POST", `/api/api-keys/${key.id}/regenerate`, { token: tenant.token })).status;
  return { credential: key.key, orgId: tenant.org.id, revoke };
}

const me = (instance: Instance, token: string, org?: string) =>
  instance.request("GET", "/api/me", { token, headers: org === undefined ? {} : { "x-organization-id": org } }).then((r) => r.status);

/** Runs the rounds; returns how many old-credential requests succeeded after the revocation answered. */
async function race(revoker: Instance, instances: Instance[]): Promise<string[]> {
  const leaks: string[] = [];
  let cachedRounds = 0;
  for (let n = 0; n < ROUNDS; n++) {
    const kind = KINDS[n % KINDS.length]!;
    const round = await setUpRound(revoker, kind);
    for (const instance of instances) expect(await me(instance, round.credential)).toBe(200);
    if (instances.every((instance) => instance.services.auth.cacheInUse())) cachedRounds += 1;
    // Cache misses in flight while the revocation runs: "7", "07", "007" ... are one organization
    // and as many cache keys. New ones start on every turn of the event loop until the answer.
    const spellings = Array.from({ length: 15 - String(round.orgId).length + 1 }, (_, zeros) => "0".repeat(zeros) + round.orgId);
    let answered = false;
    const revoked = round.revoke().finally(() => (answered = true));
    const inFlight: Promise<number>[] = [];
    for (let turn = 0; !answered; turn++) {
      for (const instance of instances) inFlight.push(me(instance, round.credential, spellings[turn % spellings.length]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await revoked).toBeOneOf([200, 204]);
    const after = await Promise.all(
      instances.flatMap((instance, i) => [undefined, ...spellings].map(async (org) => ({ i, org, status: await me(instance, round.credential, org) }))),
    );
    for (const a of after) if (a.status !== 401) leaks.push(`round ${n} (${kind}): instance ${a.i} org ${a.org ?? "-"} answered ${a.status}`);
    await Promise.all(inFlight);
  }
  // A round where an instance bypassed its cache (event loop stalled past the log's freshness bound) proves nothing about the cache.
  expect(cachedRounds).toBeGreaterThan(ROUNDS * 0.8);
  return leaks;
}

describe("revocation races (issue 14 defect 3)", () => {
  let a: Instance;
  beforeAll(async () => {
    a = await createTestContext();
  });
  afterAll(() => a?.close());

  test(`same instance, ${ROUNDS} rounds: a lookup in flight during the revocation is never cached; the old credential answers 401 at once`, async () => {
    expect(await race(a, [a])).toEqual([]);
  }, 240_000);
});

describe.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)("revocation races across instances (skipped without DATABASE_URL and REDIS_URL)", () => {
  let a: Instance;
  let b: Instance;
  beforeAll(async () => {
    const url = await freshDatabase(process.env.DATABASE_URL!);
    const prefix = `simhost-test-${crypto.randomUUID().slice(0, 8)}:`;
    a = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix });
    b = await createTestContext({ DATABASE_URL: url, REDIS_PREFIX: prefix });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  test(`two instances on one database and Redis, ${ROUNDS} rounds: revoked on A, the old credential answers 401 on A and B as soon as A answered`, async () => {
    expect(await race(a, [a, b])).toEqual([]);
  }, 240_000);
});
