-- A live lock held for a team goes on as its organization's when the team is deleted
-- (teams/store.ts deleteTeam), as the team's numbers fall back to the organization: the lock's
-- team is a foreign key that the team's deletion sets null. Before, the lock kept naming the
-- deleted team and the messages stored under it carried its id. Locks naming a team deleted
-- already are the organization's from now on. (number_locks, the history, keeps the id it had.)
update hosted_sims h set lock_team_id = null
where h.lock_team_id is not null and not exists (select 1 from teams t where t.id = h.lock_team_id);
alter table hosted_sims add constraint hosted_sims_lock_team_id_fkey foreign key (lock_team_id) references teams (id) on delete set null;
