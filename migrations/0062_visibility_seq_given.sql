-- An insert into message_visibility may give seq itself: storeInboundMessages counts a whole
-- batch in message_visibility_counts with one upsert per (organization, number) and hands out
-- the seqs of that range. The per-row trigger then leaves the counts row alone; inserts without
-- seq (outbound messages) are counted by it as before.
create or replace function message_visibility_assign_seq() returns trigger language plpgsql as $$
begin
  if new.seq is not null then
    return new;
  end if;
  insert into message_visibility_counts as c (organization_id, hosted_sim_id, last_seq, total, inbound)
  values (new.organization_id, new.hosted_sim_id, 1, 1, case when new.outbound then 0 else 1 end)
  on conflict (organization_id, hosted_sim_id) do update
    set last_seq = c.last_seq + 1, total = c.total + 1, inbound = c.inbound + case when new.outbound then 0 else 1 end
  returning last_seq into new.seq;
  return new;
end $$;
