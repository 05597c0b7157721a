import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Identity, Role } from "./api";

export type Session = { identity: Identity; orgId: number; role: Role | null; reload: () => void };
export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  return useContext(SessionContext)!;
}

/** Owners and admins manage teams, webhooks, API keys, numbers and devices (API.md §2); members do not see those actions. */
export function useIsAdmin(): boolean {
  const { role } = useSession();
  return role === "owner" || role === "admin";
}
