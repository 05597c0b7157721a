import { faker } from "@faker-js/faker";
import type { Permission, Role } from "../server/auth/caller";
import { credentialsEpoch } from "../server/auth/store";
import { API_KEY_PREFIX_LENGTH, issueSession, newApiKey } from "../server/auth/tokens";
import type { Sql } from "../server/db/client";
import { sha256 } from "../server/lib/crypto";

/** Test data written straight to the database; each call makes new, unique rows. */
export async function createOrg(sql: Sql, opts: { name?: string; plan?: "free" | "pro" | "enterprise" } = {}) {
  const [org] = await sql<{ id: number; name: string; plan: string }[]>`
    insert into organizations (name, plan) values (${opts.name ?? faker.company.name()}, ${opts.plan ?? "free"}) returning id, name, plan`;
  return org!;
}

export const TEST_PASSWORD = "correct horse battery staple";
let cachedHash: string | undefined;

export async function createUser(sql: Sql, opts: { orgId?: number; role?: Role; email?: string; password?: string; name?: string } = {}) {
  const password = opts.password ?? TEST_PASSWORD;
  const hash =
    password === TEST_PASSWORD
      ? (cachedHash ??= await Bun.password.hash(TEST_PASSWORD, { algorithm: "argon2id" }))
      : await Bun.password.hash(password, { algorithm: "argon2id" });
  const email = opts.email ?? `${crypto.randomUUID().slice(0, 12)}@example.test`;
  const [user] = await sql<{ id: number; email: string; name: string }[]>`
    insert into users (name, email, password_hash) values (${opts.name ?? faker.person.fullName()}, ${email}, ${hash}) returning id, email, name`;
  if (opts.orgId) await sql`insert into memberships (user_id, organization_id, role) values (${user!.id}, ${opts.orgId}, ${opts.role ?? "owner"})`;
  return { ...user!, password };
}

export async function sessionFor(sql: Sql, userId: number) {
  const session = await issueSession(sql, userId, { ttlSeconds: 3600, epoch: (await credentialsEpoch(sql, userId)) ?? 0 });
  if (!session) throw new Error(`no session for user ${userId}: no such user`);
  return session.token;
}

/** An organization with an owner signed in: the usual start of a test. */
export async function createTenant(sql: Sql, opts: { plan?: "free" | "pro" | "enterprise"; role?: Role } = {}) {
  const org = await createOrg(sql, { plan: opts.plan });
  const user = await createUser(sql, { orgId: org.id, role: opts.role ?? "owner" });
  const token = await sessionFor(sql, user.id);
  return { org, user, token };
}

export async function createApiKey(sql: Sql, orgId: number, permissions: Permission[]) {
  const key = newApiKey();
  const [row] = await sql<{ id: number }[]>`
    insert into api_keys (organization_id, name, key_prefix, key_hash, permissions)
    values (${orgId}, 'test key', ${key.slice(0, API_KEY_PREFIX_LENGTH)}, ${sha256(key)}, ${permissions}) returning id`;
  return { id: row!.id, key };
}
