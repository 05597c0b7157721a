-- A device's phone number is no longer stored: it is the number of its lowest-slot active SIM
-- card, derived where a device is read (server/devices/store.ts devicePhoneNumber), so it can
-- never show a number no card holds (issue 15 item 7, docs/api-notes.md "Device SIM cards").
alter table devices drop column phone_number;
