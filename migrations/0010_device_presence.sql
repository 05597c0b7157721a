-- Device presence (offline spells and their one alert) and provider callback de-duplication.

-- An offline spell starts at offline_since; offline_alerted_at is set by the one instance that
-- wins the right to send its alert (conditional update), so a spell never mails twice.
alter table devices add column offline_since timestamptz;
alter table devices add column offline_alerted_at timestamptz;
create index devices_organization_status_idx on devices (organization_id, status);
-- Instances rebuild the actors of devices that are online, or offline and still owed an alert.
create index devices_presence_idx on devices (id) where is_online or (offline_since is not null and offline_alerted_at is null);

-- Every MessageSid the provider sent us once: a repeat is a no-op whatever it carried.
create table provider_messages (
  message_sid text primary key,
  kind text not null check (kind in ('verification', 'inbound', 'dropped')),
  created_at timestamptz not null default now()
);

-- Outbound status reports look messages up by their device.
create index messages_device_idx on messages (device_id) where device_id is not null;
