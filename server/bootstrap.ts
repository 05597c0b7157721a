import type { Pool } from "./db/client";
import { randomString } from "./lib/crypto";

export type FirstOwner = { email: string; password: string; organization: { id: number; name: string } };

export const FIRST_OWNER_EMAIL = "admin@simhost.local";
const BOOTSTRAP_LOCK = 7_220_432; // two instances starting on one empty database create one owner

/**
 * On a database without any user: an organization "My organization" (plan free) and its owner
 * admin@simhost.local with a random password. Returns the credentials, or null when users
 * exist. Only the password's hash is kept, so the caller shows it once, never through the logger.
 */
export async function bootstrapFirstOwner(sql: Pool): Promise<FirstOwner | null> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`;
    const [any] = await tx`select 1 from users limit 1`;
    if (any) return null;
    const password = randomString(20);
    const hash = await Bun.password.hash(password, { algorithm: "argon2id" });
    const [org] = await tx<{ id: number; name: string }[]>`insert into organizations (name, plan) values ('My organization', 'free') returning id, name`;
    const [user] = await tx<{ id: number }[]>`
      insert into users (name, email, password_hash) values ('Administrator', ${FIRST_OWNER_EMAIL}, ${hash}) returning id`;
    await tx`insert into memberships (user_id, organization_id, role) values (${user!.id}, ${org!.id}, 'owner')`;
    return { email: FIRST_OWNER_EMAIL, password, organization: org! };
  });
}

/** The block printed on standard output once, when the first owner was just created. */
export function firstOwnerNotice(owner: FirstOwner, publicUrl: string): string {
  const line = "=".repeat(72);
  return [
    "",
    line,
    "  simhost: first start on an empty database. An owner account was created:",
    "",
    `    organization  ${owner.organization.name} (id ${owner.organization.id})`,
    `    email         ${owner.email}`,
    `    password      ${owner.password}`,
    "",
    "  This password is shown only now and is not stored in clear anywhere. Sign in with",
    `    curl -s -X POST ${publicUrl}/api/auth/login -H 'content-type: application/json' \\`,
    `      -d '{"email":"${owner.email}","password":"${owner.password}"}'`,
    `  or: bun cli/main.ts login --url ${publicUrl} --email ${owner.email}`,
    line,
    "",
    "",
  ].join("\n");
}
