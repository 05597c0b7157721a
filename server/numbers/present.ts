import type { HostedSimRow } from "./store";

/**
 * A hosted SIM as API.md §3 shows it to the organizations that read it (the caller's read scope):
 * their own attachments (alias, team), one entry per organization, never another organization's;
 * the full lock only when one of them holds it.
 */
export function presentHostedSim(row: HostedSimRow) {
  const holder = row.lock_live && row.attachments.some((a) => a.organization_id === row.lock_organization_id);
  const teams = row.attachments.flatMap((a) => (a.team_id !== null && a.team_name !== null ? [{ id: a.team_id, name: a.team_name }] : []));
  return {
    id: row.id,
    number: row.number,
    provider: row.provider,
    status: row.status,
    type: row.type,
    shared_max_orgs: row.shared_max_orgs,
    messages_received_count: row.messages_received_count,
    organizations: row.attachments.map((a) => ({ id: a.organization_id, name: a.organization_name, alias: a.alias, team_id: a.team_id })),
    teams,
    locked: row.lock_live,
    lock:
      holder && row.locked_until !== null
        ? {
            organization_id: row.lock_organization_id!,
            team_id: row.lock_team_id,
            user_id: row.lock_user_id,
            locked_until: row.locked_until,
            release_on_message: row.lock_release_on_message,
            sender: row.lock_sender,
          }
        : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
