-- Delivery reports (issue 19 item 6): how many times an outbound message was handed to a phone
-- or the provider (a provider API call, or a device taking the message: its first report).
-- A constant default, so adding it rewrites no rows.
alter table messages add column attempts integer not null default 0;
