-- Keyset pages under the page interface: each organization's view of a number numbers its
-- messages 1, 2, 3 ... in the order they became visible to it (`seq`). Page p of n, newest
-- first, is then the seq range (last - p*n, last - (p-1)*n]: an index range of n entries, as
-- fast on page 1,000 as on page 1, with no offset to walk. `last_seq` equals `total` as long as
-- no visibility row was ever removed; when it does not, pages fall back to an offset over seq.

alter table message_visibility add column seq bigint;
alter table message_visibility_counts add column last_seq bigint not null default 0;

update message_visibility v set seq = r.rn
from (select organization_id, hosted_sim_id, message_id,
             row_number() over (partition by organization_id, hosted_sim_id order by message_id) as rn
      from message_visibility) r
where v.organization_id = r.organization_id and v.hosted_sim_id = r.hosted_sim_id and v.message_id = r.message_id;

update message_visibility_counts c set last_seq = coalesce(
  (select max(seq) from message_visibility v where v.organization_id = c.organization_id and v.hosted_sim_id = c.hosted_sim_id), 0);

alter table message_visibility alter column seq set not null;
create unique index message_visibility_seq_key on message_visibility (organization_id, hosted_sim_id, seq);

-- Assigns seq before the row exists; the AFTER trigger of 0020 keeps counting total/inbound.
-- The counts row stays locked until commit, so seqs of one (organization, number) never collide.
create function message_visibility_assign_seq() returns trigger language plpgsql as $$
begin
  insert into message_visibility_counts as c (organization_id, hosted_sim_id, last_seq)
  values (new.organization_id, new.hosted_sim_id, 1)
  on conflict (organization_id, hosted_sim_id) do update set last_seq = c.last_seq + 1
  returning last_seq into new.seq;
  return new;
end $$;

create trigger message_visibility_assign_seq before insert on message_visibility
for each row execute function message_visibility_assign_seq();

-- Statistics for the new column and index, so the first plans already use the seq range.
analyze message_visibility;
