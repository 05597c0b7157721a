-- A lock ends with its organization's attachment: when a BYOS number is proven by another
-- organization, which then holds it alone (numbers/byos-store.ts attachAlone), a lock of the
-- organization that lost it is ended, recorded as `detached`. Before, the lock outlived the
-- attachment, and a message arriving under it went to the organization no longer attached.
alter table number_locks drop constraint number_locks_release_reason_check;
alter table number_locks add constraint number_locks_release_reason_check
  check (release_reason in ('unlock', 'expired', 'replaced', 'released_on_message', 'detached'));

-- Locks already outliving their attachment end now.
with stale as (
  update hosted_sims h set lock_organization_id = null, lock_team_id = null, lock_user_id = null, lock_api_key_id = null,
    locked_until = null, lock_release_on_message = false, lock_sender = null, updated_at = now()
  where h.lock_organization_id is not null
    and not exists (select 1 from hosted_sim_organizations a where a.hosted_sim_id = h.id and a.organization_id = h.lock_organization_id)
  returning h.id)
update number_locks n set released_at = least(n.locked_until, now()), release_reason = 'detached'
from stale where n.hosted_sim_id = stale.id and n.released_at is null;
