import type { Pool } from "../db/client";
import { notFound, permissionDenied, unauthenticated } from "../errors";
import type { Clock } from "../lib/clock";
import type { Caller, OrganizationRow, Permission, Role, UserContext, UserRow } from "./caller";
import { isApiKey } from "./tokens";

/** Resolves a Bearer token against the database (no cache: credentials.ts decides when to cache). */
export function createCallerLookup(opts: { sql: Pool; sessionTtlDays: number; clock: Clock }) {
  const { sql } = opts;

  /** A session or OAuth token (by its digest) → its user; sliding expiry, written at most once a minute. */
  async function userFromToken(digest: Buffer): Promise<(UserContext & { expiresAt: number }) | null> {
    const [row] = await sql<(UserRow & { session_id: number; kind: "session" | "oauth"; last_used_at: Date | null; expires_at: Date })[]>`
      select u.id, u.name, u.email, u.email_verified_at, u.totp_enabled, u.created_at, u.updated_at,
             s.id as session_id, s.kind, s.last_used_at, s.expires_at
      from sessions s join users u on u.id = s.user_id
      where s.token_hash = ${digest} and s.expires_at > now()`;
    if (!row) return null;
    if (!row.last_used_at || opts.clock.now() - row.last_used_at.getTime() > 60_000) {
      const slide = row.kind === "session" ? sql`, expires_at = now() + make_interval(days => ${opts.sessionTtlDays})` : sql``;
      await sql`update sessions set last_used_at = now() ${slide} where id = ${row.session_id}`;
    }
    const { session_id, kind, last_used_at: _, expires_at, ...user } = row;
    return { user, kind, sessionId: session_id, expiresAt: expires_at.getTime() };
  }

  async function fromApiKey(digest: Buffer): Promise<Caller | null> {
    const [row] = await sql<{ id: number; name: string; permissions: Permission[]; last_used_at: Date | null; org: OrganizationRow }[]>`
      select k.id, k.name, k.permissions, k.last_used_at,
             json_build_object('id', o.id, 'name', o.name, 'plan', o.plan, 'created_at', o.created_at, 'updated_at', o.updated_at) as org
      from api_keys k join organizations o on o.id = k.organization_id
      where k.key_hash = ${digest}`;
    if (!row) return null;
    if (!row.last_used_at || opts.clock.now() - row.last_used_at.getTime() > 60_000) {
      await sql`update api_keys set last_used_at = now() where id = ${row.id}`;
    }
    return {
      kind: "api_key",
      organization: { ...row.org, created_at: new Date(row.org.created_at), updated_at: new Date(row.org.updated_at) },
      readScope: [row.org.id],
      user: null,
      role: null,
      apiKey: { id: row.id, name: row.name, permissions: row.permissions },
      sessionId: null,
    };
  }

  /**
   * The organization a user acts in (X-Organization-Id, else their first membership) and the ones
   * their reads span (every membership, or only the named one), in one query.
   */
  async function membership(userId: number, orgHeader: string | null) {
    if (orgHeader !== null && !/^\d{1,15}$/.test(orgHeader)) throw notFound("Organization");
    const rows = await sql<(OrganizationRow & { role: Role })[]>`
      select o.id, o.name, o.plan, o.created_at, o.updated_at, m.role
      from memberships m join organizations o on o.id = m.organization_id
      where m.user_id = ${userId} order by m.created_at, o.id`;
    const row = orgHeader !== null ? rows.find((r) => r.id === Number(orgHeader)) : rows[0];
    if (!row) {
      if (orgHeader !== null) throw notFound("Organization");
      throw permissionDenied("Your account is not a member of any organization.");
    }
    const { role, ...organization } = row;
    return { organization, role, readScope: orgHeader !== null ? [row.id] : rows.map((r) => r.id) };
  }

  /**
   * `digest`: the token's sha256, which the caller has computed already (its cache key). With when
   * the token expires (a session's or OAuth token's `expires_at` as read; null for API keys, which
   * do not): no answer may be used past it.
   */
  return async function lookUp(token: string, digest: Buffer, orgHeader: string | null): Promise<{ caller: Caller; expiresAt: number | null }> {
    if (isApiKey(token)) {
      const caller = await fromApiKey(digest);
      if (!caller) throw unauthenticated();
      return { caller, expiresAt: null };
    }
    const ctx = await userFromToken(digest);
    if (!ctx) throw unauthenticated();
    const { organization, role, readScope } = await membership(ctx.user.id, orgHeader);
    return { caller: { kind: ctx.kind, organization, readScope, user: ctx.user, role, apiKey: null, sessionId: ctx.sessionId }, expiresAt: ctx.expiresAt };
  };
}
