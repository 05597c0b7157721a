import type { MemberRow, TeamRow } from "./store";

export const presentTeam = (t: TeamRow) => ({
  id: t.id,
  name: t.name,
  members_count: t.members_count,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

export const presentMember = (m: MemberRow) => ({ id: m.id, name: m.name, email: m.email, role: m.role, added_at: m.added_at.toISOString() });
