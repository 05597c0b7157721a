import type { HostedSimRow } from "./store";

/**
 * A hosted SIM as API.md §3 shows it to one organization: only that organization's own
 * attachment (alias, team), and the full lock only when that organization holds it.
 */
export function presentHostedSim(row: HostedSimRow) {
  const until = row.lock_live && row.lock_organization_id === row.organization_id ? row.locked_until : null;
  return {
    id: row.id,
    number: row.number,
    provider: row.provider,
    status: row.status,
    type: row.type,
    shared_max_orgs: row.shared_max_orgs,
    messages_received_count: row.messages_received_count,
    organizations: [{ id: row.organization_id, name: row.organization_name, alias: row.alias, team_id: row.team_id }],
    teams: row.team_id !== null && row.team_name !== null ? [{ id: row.team_id, name: row.team_name }] : [],
    locked: row.lock_live,
    lock: until !== null ? { organization_id: row.organization_id, team_id: row.lock_team_id, user_id: row.lock_user_id, locked_until: until } : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
