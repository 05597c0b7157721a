import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Identity, Role, User } from "./api";

/**
 * `reload()` asks GET /api/v2/me again; `setUser(user)` takes the user an answer carried (the 2FA
 * answers), which GET /api/v2/me may lag by the credential cache's seconds.
 */
export type Session = { identity: Identity; orgId: number; role: Role | null; reload: () => void; setUser: (user: NonNullable<User>) => void };
export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  return useContext(SessionContext)!;
}

/** Owners and admins manage teams, webhooks, API keys, numbers and devices (API.md §2); members do not see those actions. */
export function useIsAdmin(): boolean {
  const { role } = useSession();
  return role === "owner" || role === "admin";
}
