-- The send quota's count (issue 19): outbound messages per organization and UTC month that were
-- not cancelled or expired. Kept by the code that accepts sends (one conditional upsert, the last
-- statement before the commit) and by the one status move that gives a unit back
-- (server/messages/outbound-store.ts), so accepting a send reads one row instead of counting the
-- month's messages under a lock that serialized all of the organization's sends.
create table outbound_usage (
  organization_id bigint not null references organizations (id) on delete cascade,
  month date not null,
  used integer not null,
  primary key (organization_id, month)
);

insert into outbound_usage (organization_id, month, used)
select organization_id, date_trunc('month', created_at at time zone 'UTC')::date, count(*)
from messages
where direction = 'outbound' and organization_id is not null and status not in ('cancelled', 'expired')
group by 1, 2;

-- The index the month's count read; nothing else reads by (organization, created_at), and with
-- statistics behind a fast-growing table the planner ANDed its every entry into lookups by id.
drop index messages_outbound_quota_idx;
