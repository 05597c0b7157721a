import { createAdmin } from "./admin/operations";
import { createRevoker } from "./auth/revoker";
import type { Pool } from "./db/client";

export type FirstOwner = { email: string; password: string; organization: { id: number; name: string } };

export const FIRST_OWNER_EMAIL = "admin@simhost.local";

/**
 * On a database without any user: an organization "My organization" (plan free) and its owner
 * admin@simhost.local with a random password (server/admin bootstrapFirstOwner, the operation
 * the CLI's admin commands share). Returns the credentials, or null when users exist.
 */
export async function bootstrapFirstOwner(sql: Pool): Promise<FirstOwner | null> {
  // Nothing is revoked here: a revoker without peers to wait for.
  const admin = createAdmin({ sql, change: createRevoker({ sql, waitForLog: false }).change });
  return admin.bootstrapFirstOwner(FIRST_OWNER_EMAIL);
}

/** The block shown once on the terminal (standard error, outside the log stream), when the first owner was just created. */
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
