-- One write of the counts row per visibility row instead of two: the BEFORE INSERT trigger that
-- assigns seq (0021) now also counts the row, and the AFTER trigger of 0020 only handles deletes.
-- (Every insert into message_visibility that reaches the BEFORE trigger is kept or fails with
-- its statement: nothing inserts there with ON CONFLICT DO NOTHING.)

create or replace function message_visibility_assign_seq() returns trigger language plpgsql as $$
begin
  insert into message_visibility_counts as c (organization_id, hosted_sim_id, last_seq, total, inbound)
  values (new.organization_id, new.hosted_sim_id, 1, 1, case when new.outbound then 0 else 1 end)
  on conflict (organization_id, hosted_sim_id) do update
    set last_seq = c.last_seq + 1, total = c.total + 1, inbound = c.inbound + case when new.outbound then 0 else 1 end
  returning last_seq into new.seq;
  return new;
end $$;

create or replace function message_visibility_count() returns trigger language plpgsql as $$
begin
  update message_visibility_counts
  set total = total - 1, inbound = inbound - case when old.outbound then 0 else 1 end
  where organization_id = old.organization_id and hosted_sim_id = old.hosted_sim_id;
  return old;
end $$;

drop trigger message_visibility_count on message_visibility;
create trigger message_visibility_count after delete on message_visibility
for each row execute function message_visibility_count();
