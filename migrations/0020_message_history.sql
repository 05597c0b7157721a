-- Message history per organization and number: counts kept beside message_visibility so a page
-- of a number with millions of messages never counts them, and outbound rows told apart from
-- inbound ones (messages_received_count is per organization: it never reveals another
-- organization's traffic).

alter table message_visibility add column outbound boolean not null default false;

create table message_visibility_counts (
  organization_id bigint not null references organizations (id) on delete cascade,
  hosted_sim_id bigint not null references hosted_sims (id) on delete cascade,
  total bigint not null default 0,
  inbound bigint not null default 0,
  primary key (organization_id, hosted_sim_id)
);

insert into message_visibility_counts (organization_id, hosted_sim_id, total, inbound)
select organization_id, hosted_sim_id, count(*), count(*) filter (where not outbound)
from message_visibility group by organization_id, hosted_sim_id;

create function message_visibility_count() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into message_visibility_counts as c (organization_id, hosted_sim_id, total, inbound)
    values (new.organization_id, new.hosted_sim_id, 1, case when new.outbound then 0 else 1 end)
    on conflict (organization_id, hosted_sim_id)
    do update set total = c.total + 1, inbound = c.inbound + case when new.outbound then 0 else 1 end;
    return new;
  end if;
  update message_visibility_counts
  set total = total - 1, inbound = inbound - case when old.outbound then 0 else 1 end
  where organization_id = old.organization_id and hosted_sim_id = old.hosted_sim_id;
  return old;
end $$;

create trigger message_visibility_count after insert or delete on message_visibility
for each row execute function message_visibility_count();

