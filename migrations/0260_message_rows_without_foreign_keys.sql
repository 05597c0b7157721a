-- The rows every stored message writes (messages, message_visibility, events) without the foreign
-- keys that checked, row by row, what their statements already guarantee. Each key was a trigger
-- per inserted row running a lookup that also locks the referenced row (FOR KEY SHARE): five per
-- processed SMS (its message's number and device, its visibility row's message and organization,
-- its event's organization), about half of PostgreSQL's time in the processing statements
-- (auto_explain of a 1,000-SMS chunk; docs/benchmarks.md, session of 2026-11-28 05:16).
-- What they protected holds without them:
-- * a row names an existing parent: the application never deletes an organization, a number
--   (hosted_sims), a device or a message (numbers are detached, devices revoked), and every insert
--   takes the ids it writes from those rows in the same statement (the inbound statement joins
--   and updates the message's number; visibility rows are inserted with their message, or for an
--   existing one; events name the organization of the row they announce). Only a parent deleted by
--   hand while a child is being written could leave that child behind.
-- * deleting a parent by hand deletes (or, for a message's device, unlinks) its children: the
--   statement triggers below, once per deleting statement, as the keys' cascades did.
-- Keys that stay: messages.organization_id (outbound only: one lookup per send), the keys of the
-- tables written once per number or organization per batch (message_visibility_counts), and every
-- key to messages from other tables (webhook_deliveries, message_attempts).
alter table messages drop constraint messages_hosted_sim_id_fkey;
alter table messages drop constraint messages_device_id_fkey;
alter table message_visibility drop constraint message_visibility_message_id_fkey;
alter table message_visibility drop constraint message_visibility_organization_id_fkey;
alter table events drop constraint events_organization_id_fkey;

create function messages_delete_with_hosted_sims() returns trigger language plpgsql as $$
begin
  delete from messages where hosted_sim_id in (select id from gone);
  return null;
end $$;
create trigger hosted_sims_delete_messages after delete on hosted_sims
  referencing old table as gone for each statement execute function messages_delete_with_hosted_sims();

create function messages_unlink_devices() returns trigger language plpgsql as $$
begin
  update messages set device_id = null where device_id in (select id from gone);
  return null;
end $$;
create trigger devices_unlink_messages after delete on devices
  referencing old table as gone for each statement execute function messages_unlink_devices();

create function message_visibility_delete_with_messages() returns trigger language plpgsql as $$
begin
  delete from message_visibility where message_id in (select id from gone);
  return null;
end $$;
create trigger messages_delete_visibility after delete on messages
  referencing old table as gone for each statement execute function message_visibility_delete_with_messages();

create function message_rows_delete_with_organizations() returns trigger language plpgsql as $$
begin
  delete from message_visibility where organization_id in (select id from gone);
  delete from events where organization_id in (select id from gone);
  return null;
end $$;
create trigger organizations_delete_message_rows after delete on organizations
  referencing old table as gone for each statement execute function message_rows_delete_with_organizations();
