import { AppError, permissionDenied } from "../errors";

/** The credential module's interface under its former name. */
export type { Credentials as Authenticator } from "./credentials";

export const PERMISSIONS = ["numbers.read", "numbers.lock", "messages.read", "webhooks.receive"] as const;
export type Permission = (typeof PERMISSIONS)[number];
export type Role = "owner" | "admin" | "member";

export type UserRow = { id: number; name: string; email: string; email_verified_at: Date | null; totp_enabled: boolean; created_at: Date; updated_at: Date };
export type OrganizationRow = { id: number; name: string; plan: string; created_at: Date; updated_at: Date };

/** Who is calling, resolved once per request from the Bearer token. */
export type Caller = {
  kind: "session" | "oauth" | "api_key";
  /** The organization writes act in: X-Organization-Id, else the user's first membership; an API key's own. */
  organization: OrganizationRow;
  /**
   * The organizations reads span (API.md §2): every membership of the user, or only the one
   * X-Organization-Id names; an API key's one organization. Always holds `organization.id`.
   */
  readScope: number[];
  /** null for API keys */
  user: UserRow | null;
  role: Role | null;
  apiKey: { id: number; name: string; permissions: Permission[] } | null;
  /** session/oauth token row, for logout */
  sessionId: number | null;
};

/**
 * What a route accepts:
 * - `apiKey`: the permission an API key needs, or a list of which it needs one (`GET /api/events`:
 *   the route then narrows what the key reads by what it holds); "any" (no permission needed:
 *   /api/me, connection details); "none" (no permission grants it: 403 permission_denied); "session_only" (API-key
 *   management, 2FA, BYOS: 403 api_key_not_allowed).
 * - `role`: "admin" for users managing teams, webhooks, keys, numbers or revoking devices. An API
 *   key is governed by its permission alone.
 */
export type Rule = { apiKey: Permission | Permission[] | "any" | "none" | "session_only"; role?: "admin" };

const ROLE_RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 };

export function bearerToken(header: string | null): string | null {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return match?.[1] ?? null;
}

export type UserContext = { user: UserRow; kind: "session" | "oauth"; sessionId: number };

export const apiKeyNotAllowed = () => new AppError(403, "api_key_not_allowed", "This operation accepts session tokens only, not API keys.");

/** Enforces a route's rule on a resolved caller (API.md §2 permission matrix and roles). */
export function authorize(caller: Caller, rule: Rule): Caller {
  if (caller.apiKey) {
    if (rule.apiKey === "session_only") throw apiKeyNotAllowed();
    if (rule.apiKey === "none") throw permissionDenied("API keys cannot perform this operation.");
    if (Array.isArray(rule.apiKey)) {
      const held = caller.apiKey.permissions;
      if (!rule.apiKey.some((p) => held.includes(p))) throw permissionDenied(`This API key needs one of the permissions ${rule.apiKey.join(", ")}.`);
    } else if (rule.apiKey !== "any" && !caller.apiKey.permissions.includes(rule.apiKey))
      throw permissionDenied(`This API key lacks the ${rule.apiKey} permission.`);
    return caller;
  }
  if (rule.role && ROLE_RANK[caller.role ?? "member"] < ROLE_RANK[rule.role]) {
    throw permissionDenied("This operation needs the admin or owner role in the organization.");
  }
  return caller;
}

/** Narrows a caller that must be a user (session or OAuth). */
export function requireUser(caller: Caller): UserRow {
  if (!caller.user) throw apiKeyNotAllowed();
  return caller.user;
}
