-- Scheduled, expiring, cancellable and bulk sends (issue 19 items 2 and 3).
-- send_at: when a scheduled send goes out (null: at once); expires_at: after it a send not yet
-- handed to a phone or the provider ends `expired`; batch_id: the bulk request it came from;
-- status_updated_at: when the status last changed (null on rows older than this column: the
-- API shows updated_at for them, so no table rewrite is needed).
alter table messages
  add column send_at timestamptz,
  add column expires_at timestamptz,
  add column batch_id uuid,
  add column status_updated_at timestamptz;

create index messages_batch_idx on messages (batch_id, id) where batch_id is not null;
