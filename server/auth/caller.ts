import type { Pool } from "../db/client";
import { AppError, notFound, permissionDenied, unauthenticated } from "../errors";
import { sha256 } from "../lib/crypto";
import type { Bus } from "../realtime/bus";
import { createCallerCache, type Revocation } from "./caller-cache";

export const PERMISSIONS = ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"] as const;
export type Permission = (typeof PERMISSIONS)[number];
export type Role = "owner" | "admin" | "member";

export type UserRow = { id: number; name: string; email: string; email_verified_at: Date | null; totp_enabled: boolean; created_at: Date; updated_at: Date };
export type OrganizationRow = { id: number; name: string; plan: string; created_at: Date; updated_at: Date };

/** Who is calling, resolved once per request from the Bearer token. */
export type Caller = {
  kind: "session" | "oauth" | "api_key";
  organization: OrganizationRow;
  /** null for API keys */
  user: UserRow | null;
  role: Role | null;
  apiKey: { id: number; name: string; permissions: Permission[] } | null;
  /** session/oauth token row, for logout */
  sessionId: number | null;
};

/**
 * What a route accepts:
 * - `apiKey`: the permission an API key needs; "any" (no permission needed: /api/me, connection
 *   details); "none" (no permission grants it: 403 permission_denied); "session_only" (API-key
 *   management, 2FA, BYOS: 403 api_key_not_allowed).
 * - `role`: "admin" for users managing teams, webhooks, keys, numbers or revoking devices. An API
 *   key is governed by its permission alone.
 */
export type Rule = { apiKey: Permission | "any" | "none" | "session_only"; role?: "admin" };

const ROLE_RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 };

export function bearerToken(header: string | null): string | null {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return match?.[1] ?? null;
}

export type UserContext = { user: UserRow; kind: "session" | "oauth"; sessionId: number };

export type Authenticator = ReturnType<typeof createAuthenticator>;

/** Bus channel of revocations; no client can subscribe to it (only `private-` channels). */
const REVOCATIONS = "internal:auth";

export function createAuthenticator(opts: { sql: Pool; sessionTtlDays: number; bus?: Bus; cacheSeconds?: number; now?: () => number }) {
  const { sql } = opts;
  const now = opts.now ?? Date.now;
  const cache = createCallerCache({ ttlMs: (opts.cacheSeconds ?? 10) * 1000, max: 100_000, now });
  opts.bus?.subscribe((m) => {
    if (m.channel === REVOCATIONS) cache.forget(m.data as Revocation);
  });

  /** A session or OAuth token → its user; sliding expiry, written at most once a minute. */
  async function userFromToken(token: string): Promise<UserContext | null> {
    const [row] = await sql<(UserRow & { session_id: number; kind: "session" | "oauth"; last_used_at: Date | null })[]>`
      select u.id, u.name, u.email, u.email_verified_at, u.totp_enabled, u.created_at, u.updated_at,
             s.id as session_id, s.kind, s.last_used_at
      from sessions s join users u on u.id = s.user_id
      where s.token_hash = ${sha256(token)} and s.expires_at > now()`;
    if (!row) return null;
    if (!row.last_used_at || Date.now() - row.last_used_at.getTime() > 60_000) {
      const slide = row.kind === "session" ? sql`, expires_at = now() + make_interval(days => ${opts.sessionTtlDays})` : sql``;
      await sql`update sessions set last_used_at = now() ${slide} where id = ${row.session_id}`;
    }
    const { session_id, kind, last_used_at: _, ...user } = row;
    return { user, kind, sessionId: session_id };
  }

  async function fromApiKey(token: string): Promise<Caller | null> {
    const [row] = await sql<{ id: number; name: string; permissions: Permission[]; last_used_at: Date | null; org: OrganizationRow }[]>`
      select k.id, k.name, k.permissions, k.last_used_at,
             json_build_object('id', o.id, 'name', o.name, 'plan', o.plan, 'created_at', o.created_at, 'updated_at', o.updated_at) as org
      from api_keys k join organizations o on o.id = k.organization_id
      where k.key_hash = ${sha256(token)}`;
    if (!row) return null;
    if (!row.last_used_at || Date.now() - row.last_used_at.getTime() > 60_000) {
      await sql`update api_keys set last_used_at = now() where id = ${row.id}`;
    }
    return {
      kind: "api_key",
      organization: { ...row.org, created_at: new Date(row.org.created_at), updated_at: new Date(row.org.updated_at) },
      user: null,
      role: null,
      apiKey: { id: row.id, name: row.name, permissions: row.permissions },
      sessionId: null,
    };
  }

  /** The organization a user acts in: X-Organization-Id, else their first membership. */
  async function membership(userId: number, orgHeader: string | null) {
    if (orgHeader !== null && !/^\d{1,15}$/.test(orgHeader)) throw notFound("Organization");
    const [row] = await sql<(OrganizationRow & { role: Role })[]>`
      select o.id, o.name, o.plan, o.created_at, o.updated_at, m.role
      from memberships m join organizations o on o.id = m.organization_id
      where m.user_id = ${userId} ${orgHeader !== null ? sql`and o.id = ${Number(orgHeader)}` : sql``}
      order by m.created_at, o.id limit 1`;
    if (!row) {
      if (orgHeader !== null) throw notFound("Organization");
      throw permissionDenied("Your account is not a member of any organization.");
    }
    const { role, ...organization } = row;
    return { organization, role };
  }

  async function lookUp(token: string, orgHeader: string | null): Promise<Caller> {
    if (token.startsWith("sk_")) {
      const caller = await fromApiKey(token);
      if (!caller) throw unauthenticated();
      return caller;
    }
    const ctx = await userFromToken(token);
    if (!ctx) throw unauthenticated();
    const { organization, role } = await membership(ctx.user.id, orgHeader);
    return { kind: ctx.kind, organization, user: ctx.user, role, apiKey: null, sessionId: ctx.sessionId };
  }

  async function resolve(request: Request): Promise<Caller> {
    const token = bearerToken(request.headers.get("authorization"));
    if (!token) throw unauthenticated();
    const orgHeader = request.headers.get("x-organization-id");
    const key = `${sha256(token).toString("base64")}|${orgHeader ?? ""}`;
    const cached = cache.get(key);
    if (cached) return cached;
    const caller = await lookUp(token, orgHeader);
    cache.set(key, caller);
    return caller;
  }

  /**
   * A session, API key or user's access changed (logout, revocation, regenerated or re-permitted
   * key): every instance drops what it cached. Call after the change is committed.
   */
  function revoke(r: Revocation) {
    cache.forget(r);
    opts.bus?.publish(REVOCATIONS, "revoke", r);
  }

  return { resolve, revoke };
}

/** Enforces a route's rule on a resolved caller (API.md §2 permission matrix and roles). */
export function authorize(caller: Caller, rule: Rule): Caller {
  if (caller.apiKey) {
    if (rule.apiKey === "session_only") throw new AppError(403, "api_key_not_allowed", "This operation accepts session tokens only, not API keys.");
    if (rule.apiKey === "none") throw permissionDenied("API keys cannot perform this operation.");
    if (rule.apiKey !== "any" && !caller.apiKey.permissions.includes(rule.apiKey)) throw permissionDenied(`This API key lacks the ${rule.apiKey} permission.`);
    return caller;
  }
  if (rule.role && ROLE_RANK[caller.role ?? "member"] < ROLE_RANK[rule.role]) {
    throw permissionDenied("This operation needs the admin or owner role in the organization.");
  }
  return caller;
}

/** Narrows a caller that must be a user (session or OAuth). */
export function requireUser(caller: Caller): UserRow {
  if (!caller.user) throw new AppError(403, "api_key_not_allowed", "This operation accepts session tokens only, not API keys.");
  return caller.user;
}
