-- Per-SIM sending policy and its durable pacing state (issue 19 items 4 and 5).
-- sending_policies: an organization's default (hosted_sim_id null) and its per-number overrides.
-- Delays in milliseconds, quiet hours as minutes of the day in `time_zone` (IANA), both null
-- when there are none.
create table sending_policies (
  id bigserial primary key,
  organization_id bigint not null references organizations (id) on delete cascade,
  hosted_sim_id bigint references hosted_sims (id) on delete cascade,
  messages_per_minute int not null,
  min_delay_ms int not null,
  max_delay_ms int not null,
  daily_cap int not null,
  quiet_start smallint,
  quiet_end smallint,
  time_zone text not null,
  updated_at timestamptz not null default now()
);
create unique index sending_policies_scope_idx on sending_policies (organization_id, coalesce(hosted_sim_id, 0));

-- One row per SIM that has sent through the pacer: when its next message may go, and how many
-- went on its current local day. Dispatch locks the row, so pacing holds across instances and
-- restarts. wake_at: the due time of the dispatch job already enqueued for it, if any.
create table sim_pacing (
  hosted_sim_id bigint primary key references hosted_sims (id) on delete cascade,
  next_allowed_at timestamptz,
  day text,
  day_count int not null default 0,
  wake_at timestamptz
);

-- dispatched_at: when a device send was handed to its phone (message.send); a queued device
-- send without it is waiting for its phone or its pacing slot. Sends queued before this
-- migration were handed over at acceptance.
alter table messages add column dispatched_at timestamptz;
update messages set dispatched_at = coalesce(status_updated_at, created_at)
  where direction = 'outbound' and device_id is not null and status = 'queued';
create index messages_waiting_sim_idx on messages (hosted_sim_id, id)
  where direction = 'outbound' and status = 'queued' and device_id is not null and dispatched_at is null;
create index messages_waiting_device_idx on messages (device_id)
  where direction = 'outbound' and status = 'queued' and device_id is not null and dispatched_at is null;
-- The sticky sender of a sender pool: the number that last wrote to a recipient.
create index messages_outbound_recipient_idx on messages (organization_id, to_number, id) where direction = 'outbound';
