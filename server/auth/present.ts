import type { Caller, OrganizationRow, UserRow } from "./caller";

function iso(d: Date | string): string;
function iso(d: Date | string | null): string | null;
function iso(d: Date | string | null) {
  return d === null ? null : new Date(d).toISOString();
}

export const presentUser = (u: UserRow) => ({
  id: u.id,
  name: u.name,
  email: u.email,
  email_verified_at: iso(u.email_verified_at),
  two_factor_enabled: u.totp_enabled,
  created_at: iso(u.created_at),
  updated_at: iso(u.updated_at),
});

export const presentOrganization = (o: OrganizationRow) => ({ id: o.id, name: o.name, created_at: iso(o.created_at), updated_at: iso(o.updated_at) });

/** GET /api/me (SPEC.md 4.2 "Current identity"); `user` is the caller's, or the one an API key answers for (store.ts findApiKeyUser). */
export const presentIdentity = (c: Caller, user: UserRow | null | undefined = c.user) => ({
  user: user ? presentUser(user) : null,
  auth_type: c.kind,
  organization: presentOrganization(c.organization),
  ...(c.apiKey ? { api_key: c.apiKey } : {}),
});
